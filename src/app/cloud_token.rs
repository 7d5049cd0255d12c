//! A ReteCloud session's token in reterm's secrets file (`~/.rete/secrets.json`,
//! or `$RETE_SECRETS_FILE`), beside the control server's token: mode 0600,
//! replaced atomically (`reterm::secrets::store_secret`), one key per
//! service URL, shared by the account's networks there (see
//! `NetworkConfig::cloud_token_key`). The engine reads it before every
//! connection and writes a rotated one here, with its generation, before
//! acknowledging it, never over a later generation another session stored;
//! `reterm retecloud-token NAME` sets it.

use rete_cloud_protocol::Token;
use rete_transports::{CloudTokenStore, TokenStoreError, TokenStored};
use std::path::PathBuf;

/// One service account's token in the secrets file.
pub struct SecretsFileToken {
    /// The secrets file.
    pub path: PathBuf,
    /// The service's key in it.
    pub key: String,
    /// The network's own key, where a token set before tokens were kept per
    /// service sits: read while the service's key holds none.
    pub legacy_key: String,
}

impl CloudTokenStore for SecretsFileToken {
    fn load(&self) -> Result<Option<Token>, TokenStoreError> {
        let read = |key: &str| {
            reterm::secrets::read_secret(&self.path, key)
                .map_err(|e| TokenStoreError(e.to_string()))
        };
        let stored = match read(&self.key)? {
            Some(t) => Some(t),
            None => read(&self.legacy_key)?,
        };
        Ok(stored.map(Token::new))
    }

    fn store(&self, token: &Token, generation: u64) -> Result<TokenStored, TokenStoreError> {
        let written = reterm::secrets::store_secret_generation(
            &self.path,
            &self.key,
            token.expose(),
            generation,
        )
        .map_err(|e| TokenStoreError(e.to_string()))?;
        Ok(if written {
            TokenStored::Written
        } else {
            TokenStored::LaterKept
        })
    }
}
