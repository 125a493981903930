//! Copies the files of a local directory to an object-store prefix:
//! `cargo run -p gulp-store --example s3_put -- DIR s3://bucket/prefix [--truncate NAME:BYTES]`
//! (the S3 tests upload directories with it; `--truncate` uploads a file cut
//! short, as a damaged upload would leave it), or back with
//! `s3_put --get s3://bucket/prefix DIR`.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [get, url, dir] = &args[..]
        && get == "--get"
    {
        std::fs::create_dir_all(dir)?;
        for entry in gulp_store::list_dir(Path::new(url))? {
            let bytes = gulp_store::read(&entry.path)?;
            std::fs::write(Path::new(dir).join(entry.name), bytes)?;
        }
        return Ok(());
    }
    let (dir, url) = match &args[..] {
        [dir, url, ..] => (PathBuf::from(dir), url.clone()),
        _ => return Err("usage: s3_put DIR s3://bucket/prefix [--truncate NAME:BYTES]".into()),
    };
    let truncate = args
        .iter()
        .position(|a| a == "--truncate")
        .and_then(|i| args.get(i + 1))
        .and_then(|t| t.split_once(':'))
        .map(|(n, b)| (n.to_owned(), b.parse::<usize>().unwrap()));
    let mut names: Vec<String> = std::fs::read_dir(&dir)?
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    for name in names {
        let mut bytes = std::fs::read(dir.join(&name))?;
        if let Some((t, n)) = &truncate
            && *t == name
        {
            bytes.truncate(*n);
        }
        let target = format!("{}/{name}", url.trim_end_matches('/'));
        gulp_store::write_object(Path::new(&target), bytes)?;
    }
    Ok(())
}
