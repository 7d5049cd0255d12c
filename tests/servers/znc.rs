//! The shared server scenarios through a real ZNC 1.8, under both AutoClearChanBuffer
//! settings: in front of InspIRCd with ZNC's default (clear after playback), and in front of
//! ngircd keeping its buffers (every attach replays everything, which showed the duplicate
//! rows bug). One upstream server and one ZNC per test.

use anyhow::Result;
use support::server_scenarios::{wait_on_server, znc_suite, Server, Target, ME};
use support::{Inspircd, InspircdConfig, Ngircd, NgircdConfig, Znc, ZncConfig};

const PASSWORD: &str = "upstream-pass";

async fn through_znc(server: Server, keeps_buffer: bool) -> Result<()> {
    let znc = Znc::start(
        ZncConfig::new(server.port(), ME)
            .upstream_password(PASSWORD)
            .channels(&["#play"])
            .auto_clear_chan_buffer(!keeps_buffer),
    )
    .await?;
    let mut target = Target {
        server,
        password: PASSWORD.to_owned(),
        znc: Some(znc),
    };
    wait_on_server(&target, ME).await?;
    znc_suite(&mut target, keeps_buffer).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn znc_clearing_its_buffers_in_front_of_inspircd() -> Result<()> {
    let server = Inspircd::start(InspircdConfig::new().password(PASSWORD)).await?;
    through_znc(Server::Inspircd(server), false).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn znc_keeping_its_buffers_in_front_of_ngircd() -> Result<()> {
    let server = Ngircd::start(NgircdConfig::new().password(PASSWORD)).await?;
    through_znc(Server::Ngircd(server), true).await
}
