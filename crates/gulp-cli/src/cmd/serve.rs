//! `gulp serve`: the gallery in the browser (crate gulp-serve).

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use anyhow::{Context, Result};
use gulp_serve::{App, Options};

use crate::Outcome;
use crate::cli::ServeArgs;

pub(super) fn run(args: &ServeArgs) -> Result<Outcome> {
    let addr: SocketAddr = match args.host.parse::<IpAddr>() {
        Ok(ip) => SocketAddr::new(ip, args.port),
        Err(_) => (args.host.as_str(), args.port)
            .to_socket_addrs()
            .with_context(|| format!("--host {:?}", args.host))?
            .next()
            .with_context(|| format!("--host {:?} has no address", args.host))?,
    };
    if !addr.ip().is_loopback() {
        eprintln!(
            "gulp serve: warning: listening on {}: the data is visible to the network",
            addr.ip()
        );
    }
    let options = Options {
        lint: args.lint.clone(),
        open: super::directory_options(),
        label_key: args.label_key.clone(),
        ..Options::new(args.dirs.clone())
    };
    let app = App::open(options)?;
    gulp_serve::run(app, addr, |bound| {
        println!(
            "gulp serve: {} directories at http://{bound}/",
            args.dirs.len()
        );
    })
    .with_context(|| format!("serving on {addr}"))?;
    Ok(Outcome::Success)
}
