//! `gulp serve` as a process: where it listens, what it says.
#![cfg(feature = "serve")]
// The helpers of tests/common unwrap.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Server {
    /// Stops the server and returns what it wrote to stderr.
    fn stop(mut self) -> String {
        let _ = self.0.kill();
        let mut err = String::new();
        self.0
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut err)
            .expect("read");
        err
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `gulp serve` with `args` and returns it with its first line of
/// output (the address) and what it wrote to stderr before it.
fn serve(args: &[&str]) -> (Server, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_gulp"))
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut server = Server(child);
    let stdout = server.0.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("read");
    (server, line)
}

fn status_of(url: &str) -> u16 {
    let rest = url.trim().trim_start_matches("http://");
    let (host, _) = rest.split_once('/').expect("url");
    let mut stream = TcpStream::connect(host).expect("connect");
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("send");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[test]
fn serves_on_loopback_unless_told_otherwise() {
    let dir = common::clean_dir();
    let path = dir.path().to_str().expect("utf-8");
    let (server, line) = serve(&[path, "--port", "0"]);
    assert!(
        line.starts_with("gulp serve: 1 directories at http://127.0.0.1:"),
        "{line}"
    );
    let url = line.split(" at ").nth(1).expect("url");
    assert_eq!(status_of(url), 200);
    let err = server.stop();
    assert!(!err.contains("warning"), "{err}");

    let (server, line) = serve(&[path, "--host", "0.0.0.0", "--port", "0"]);
    assert!(line.contains("http://0.0.0.0:"), "{line}");
    let err = server.stop();
    assert!(
        err.contains("warning: listening on 0.0.0.0: the data is visible to the network"),
        "{err}"
    );
}

#[test]
fn a_directory_that_cannot_be_opened_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing");
    common::gulp()
        .args(["serve", missing.to_str().expect("utf-8"), "--port", "0"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("missing"));
}
