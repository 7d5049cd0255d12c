//! The shared server scenarios (`support/server_scenarios.rs`) against a real ngircd 26, the
//! server that showed the nick-length and wrong-password bugs. One server for the binary.

use anyhow::Result;
use support::server_scenarios::{direct_suite, Server, Target};
use support::{Ngircd, NgircdConfig};

const PASSWORD: &str = "ngircd-pass";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ngircd_passes_the_server_scenarios() -> Result<()> {
    let server = Ngircd::start(NgircdConfig::new().password(PASSWORD)).await?;
    let mut target = Target {
        server: Server::Ngircd(server),
        password: PASSWORD.to_owned(),
        znc: None,
    };
    direct_suite(&mut target).await
}
