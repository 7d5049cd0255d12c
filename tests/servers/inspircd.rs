//! The shared server scenarios (`support/server_scenarios.rs`) against a real InspIRCd 3.
//! One server for the binary.

use anyhow::Result;
use support::server_scenarios::{direct_suite, Server, Target};
use support::{Inspircd, InspircdConfig};

const PASSWORD: &str = "inspircd-pass";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspircd_passes_the_server_scenarios() -> Result<()> {
    let server = Inspircd::start(InspircdConfig::new().password(PASSWORD)).await?;
    let mut target = Target {
        server: Server::Inspircd(server),
        password: PASSWORD.to_owned(),
        znc: None,
    };
    direct_suite(&mut target).await
}
