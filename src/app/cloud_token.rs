//! A ReteCloud session's token in reterm's secrets file (`~/.rete/secrets.json`,
//! or `$RETE_SECRETS_FILE`), beside the control server's token: mode 0600,
//! replaced atomically (`rete_mcp::token::store_secret`), one key per
//! network id. The engine reads it before connecting and writes a rotated
//! one here before acknowledging it; `reterm retecloud-token NAME` sets it.

use rete_transports::retecloud::Token;
use rete_transports::{CloudTokenStore, TokenStoreError};
use std::path::PathBuf;

/// One network's token in the secrets file.
pub struct SecretsFileToken {
    /// The secrets file.
    pub path: PathBuf,
    /// The network's key in it.
    pub key: String,
}

impl CloudTokenStore for SecretsFileToken {
    fn load(&self) -> Result<Option<Token>, TokenStoreError> {
        rete_mcp::token::read_secret(&self.path, &self.key)
            .map(|t| t.map(Token::new))
            .map_err(|e| TokenStoreError(e.to_string()))
    }

    fn store(&self, token: &Token) -> Result<(), TokenStoreError> {
        rete_mcp::token::store_secret(&self.path, &self.key, token.expose())
            .map_err(|e| TokenStoreError(e.to_string()))
    }
}
