//! `gulp status OUT --shards N`: where a sharded ingest is
//! ([`gulp_ingest::shard::status`]), printed.

use std::io::Write;

use anyhow::Result;

use crate::Outcome;
use crate::cli::StatusArgs;

pub(super) fn run(args: &StatusArgs) -> Result<Outcome> {
    let status = gulp_ingest::shard::status(&args.dir, args.shards.map(|n| n.get()))?;
    let (shards, remote) = (status.shards, status.in_bucket);
    let mut out = super::stdout();
    if args.json {
        super::write_json(&mut out, &status)?;
    } else {
        match status.chunks_total {
            Some(t) => writeln!(
                out,
                "{}: sharded ingest of {t} chunks over {shards} tasks; {} committed",
                status.dir, status.chunks_committed
            )?,
            None => writeln!(
                out,
                "{}: no sharded ingest under way; {} chunks",
                status.dir, status.chunks_committed
            )?,
        }
        for t in &status.tasks {
            let missing = if t.missing.is_empty() {
                String::new()
            } else {
                let list: Vec<String> = t.missing.iter().map(u64::to_string).collect();
                format!("; missing chunks {}", list.join(","))
            };
            writeln!(
                out,
                "task {}/{shards}: {} ({}/{} chunks){missing}",
                t.task, t.state, t.committed, t.chunks
            )?;
        }
        if !status.resubmit.is_empty() {
            let list: Vec<String> = status.resubmit.iter().map(usize::to_string).collect();
            if remote {
                writeln!(
                    out,
                    "(in a bucket a running task cannot be told from a stopped one: \"stopped\" tasks may still be running)"
                )?;
            }
            writeln!(out, "to finish, run tasks {} again:", list.join(", "))?;
            writeln!(
                out,
                "  Slurm: sbatch --array={} <the same script and arguments>  (--shard auto takes the task from SLURM_ARRAY_TASK_ID and the count, {shards}, from the run's plan in {})",
                list.join(","),
                status.dir
            )?;
            writeln!(
                out,
                "  Kubernetes: create the Indexed Job again with completions: {shards} (the tasks that are done find their chunks committed and skip them)"
            )?;
        }
    }
    out.flush()?;
    Ok(if status.complete {
        Outcome::Success
    } else {
        Outcome::ProblemsFound
    })
}
