//! This process's rank, the world size and the ranks on this node, as the
//! launcher says them: `torch.distributed` (given by the Python binding),
//! torchrun's (Lightning's, accelerate's) `RANK` / `WORLD_SIZE` /
//! `LOCAL_WORLD_SIZE`, or the `SLURM_PROCID` / `SLURM_NTASKS` /
//! `SLURM_NTASKS_PER_NODE` of a task started by `srun`. A training script
//! that does not say `rank=` still gets its share of the epoch, not all of
//! it on every rank.

use std::fmt;

/// Who said what the ranks are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// An initialised `torch.distributed` process group.
    TorchDistributed,
    /// `RANK` and `WORLD_SIZE` (torchrun, Lightning, accelerate).
    Torchrun,
    /// `SLURM_PROCID` and `SLURM_NTASKS` of a task of an `srun` step.
    Slurm,
}

impl fmt::Display for Launcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Launcher::TorchDistributed => "torch.distributed",
            Launcher::Torchrun => "RANK/WORLD_SIZE",
            Launcher::Slurm => "SLURM_PROCID/SLURM_NTASKS",
        })
    }
}

/// What a launcher says of this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    /// Who says it.
    pub launcher: Launcher,
    /// This process's rank.
    pub rank: usize,
    /// Processes of the job.
    pub world_size: usize,
    /// Processes of the job on this node, when the launcher says it.
    pub local_world_size: Option<usize>,
}

impl Launch {
    /// What the environment variables of a launcher say (`env` reads a
    /// variable): torchrun's first, then Slurm's for a task of an `srun`
    /// step (`SLURM_STEP_ID` set: a batch script run as one process also
    /// has `SLURM_NTASKS`, and is not one of several ranks). `None` when
    /// no launcher is there or what it says does not parse.
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Option<Launch> {
        let number = |k: &str| env(k)?.trim().parse::<usize>().ok();
        let (launcher, rank, world_size) = match (number("RANK"), number("WORLD_SIZE")) {
            (Some(rank), Some(world_size)) => (Launcher::Torchrun, rank, world_size),
            _ => {
                env("SLURM_STEP_ID")?;
                (
                    Launcher::Slurm,
                    number("SLURM_PROCID")?,
                    number("SLURM_NTASKS")?,
                )
            }
        };
        Some(Launch {
            launcher,
            rank,
            world_size,
            local_world_size: Launch::local_from_env(&env).map(|(n, _)| n),
        })
        .filter(Launch::is_valid)
    }

    /// The ranks on this node as the environment says them, even without
    /// the job's ranks: torchrun's `LOCAL_WORLD_SIZE`, else the
    /// `SLURM_NTASKS_PER_NODE` of an `srun` step.
    pub fn local_from_env(env: impl Fn(&str) -> Option<String>) -> Option<(usize, Launcher)> {
        let number = |k: &str| env(k)?.trim().parse::<usize>().ok().filter(|n| *n > 0);
        if let Some(n) = number("LOCAL_WORLD_SIZE") {
            return Some((n, Launcher::Torchrun));
        }
        env("SLURM_STEP_ID")?;
        number("SLURM_NTASKS_PER_NODE").map(|n| (n, Launcher::Slurm))
    }

    /// This process's rank on its node, as the launcher says it: torchrun's
    /// `LOCAL_RANK`, else the `SLURM_LOCALID` of a task of an `srun` step.
    /// It is the GPU a rank uses when the process has not chosen one
    /// (`device="cuda"` in the Python binding, `init_distributed`).
    pub fn local_rank_from_env(env: impl Fn(&str) -> Option<String>) -> Option<(usize, Launcher)> {
        let number = |k: &str| env(k)?.trim().parse::<usize>().ok();
        if let Some(n) = number("LOCAL_RANK") {
            return Some((n, Launcher::Torchrun));
        }
        env("SLURM_STEP_ID")?;
        number("SLURM_LOCALID").map(|n| (n, Launcher::Slurm))
    }

    fn is_valid(&self) -> bool {
        self.world_size > 0 && self.rank < self.world_size
    }
}

/// Where a value of [`Ranks`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankSource {
    /// Given by the caller.
    Given,
    /// Said by a launcher.
    Launcher(Launcher),
    /// Nobody said: rank 0 of 1, one rank on the node.
    Default,
}

impl fmt::Display for RankSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RankSource::Given => f.write_str("given"),
            RankSource::Launcher(l) => write!(f, "from {l}"),
            RankSource::Default => f.write_str("default: no launcher"),
        }
    }
}

/// What a caller gives of the ranks (`None`: from the launcher).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GivenRanks {
    /// This process's rank.
    pub rank: Option<usize>,
    /// Processes of the job.
    pub world_size: Option<usize>,
    /// Processes of the job on this node (they share its cores).
    pub local_world_size: Option<usize>,
}

/// The ranks a loader runs with, and where they came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ranks {
    /// This process's rank, `0..world_size`.
    pub rank: usize,
    /// Processes of the job.
    pub world_size: usize,
    /// Processes of the job on this node, among which the cores are
    /// divided (`threads = None`).
    pub local_world_size: usize,
    /// Where `rank` and `world_size` came from.
    pub source: RankSource,
    /// Where `local_world_size` came from.
    pub local_source: RankSource,
}

impl Ranks {
    /// The launcher's ranks from this process's environment (rank 0 of 1
    /// without a launcher).
    pub fn from_env() -> Ranks {
        let env = |k: &str| std::env::var(k).ok();
        Ranks::resolve(
            GivenRanks::default(),
            Launch::from_env(env),
            Launch::local_from_env(env),
        )
        .0
    }

    /// The ranks: each value given wins, the others come from `launch`
    /// (the node's count from `local` when `launch` does not say it; else
    /// rank 0 of 1, one rank on the node). A given value that contradicts
    /// the launcher is kept, and a warning says both (a script that says
    /// `world_size=1` under a launcher of 4 ranks trains every rank on the
    /// whole epoch).
    pub fn resolve(
        given: GivenRanks,
        launch: Option<Launch>,
        local: Option<(usize, Launcher)>,
    ) -> (Ranks, Vec<String>) {
        let mut warnings = Vec::new();
        let mut pick = |name: &str,
                        given: Option<usize>,
                        said: Option<(usize, Launcher)>,
                        default: usize| match (given, said) {
            (Some(g), Some((s, launcher))) if g != s => {
                warnings.push(format!(
                    "{name}={g} was given, but the launcher ({launcher}) says {name} {s}; \
                     using {g}"
                ));
                (g, RankSource::Given)
            }
            (Some(g), _) => (g, RankSource::Given),
            (None, Some((s, launcher))) => (s, RankSource::Launcher(launcher)),
            (None, None) => (default, RankSource::Default),
        };
        let said = |f: fn(&Launch) -> usize| launch.map(|l| (f(&l), l.launcher));
        let (world_size, world_from) =
            pick("world_size", given.world_size, said(|l| l.world_size), 1);
        let (rank, rank_from) = pick("rank", given.rank, said(|l| l.rank), 0);
        let node = launch
            .and_then(|l| l.local_world_size.map(|n| (n, l.launcher)))
            .or(local);
        let (local_world_size, local_source) =
            pick("local_world_size", given.local_world_size, node, 1);
        let source = match (rank_from, world_from) {
            (RankSource::Given, _) | (_, RankSource::Given) => RankSource::Given,
            (from, _) => from,
        };
        let ranks = Ranks {
            rank,
            world_size,
            local_world_size,
            source,
            local_source,
        };
        (ranks, warnings)
    }
}

impl fmt::Display for Ranks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rank {} of {} ({}), {} on this node ({})",
            self.rank, self.world_size, self.source, self.local_world_size, self.local_source
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn launchers_are_read_in_order() {
        let torchrun = [
            ("RANK", "1"),
            ("WORLD_SIZE", "4"),
            ("LOCAL_WORLD_SIZE", "2"),
        ];
        let l = Launch::from_env(env(&torchrun)).expect("torchrun");
        assert_eq!(
            (l.launcher, l.rank, l.world_size, l.local_world_size),
            (Launcher::Torchrun, 1, 4, Some(2))
        );
        let srun = [
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "3"),
            ("SLURM_NTASKS", "8"),
            ("SLURM_NTASKS_PER_NODE", "4"),
        ];
        let l = Launch::from_env(env(&srun)).expect("srun");
        assert_eq!((l.launcher, l.rank, l.world_size), (Launcher::Slurm, 3, 8));
        // A batch script (no step) is one process, whatever SLURM_NTASKS says.
        assert_eq!(Launch::from_env(env(&srun[1..])), None);
        // torchrun's variables win over Slurm's (torchrun inside srun).
        let both: Vec<_> = torchrun.iter().chain(&srun).copied().collect();
        assert_eq!(
            Launch::from_env(env(&both)).map(|l| l.launcher),
            Some(Launcher::Torchrun)
        );
        // Nonsense is no launcher.
        assert_eq!(
            Launch::from_env(env(&[("RANK", "4"), ("WORLD_SIZE", "4")])),
            None
        );
        assert_eq!(Launch::from_env(env(&[("RANK", "x")])), None);
    }

    #[test]
    fn local_rank_from_torchrun_then_srun() {
        let torchrun = [
            ("LOCAL_RANK", "1"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_LOCALID", "3"),
        ];
        assert_eq!(
            Launch::local_rank_from_env(env(&torchrun)),
            Some((1, Launcher::Torchrun))
        );
        assert_eq!(
            Launch::local_rank_from_env(env(&torchrun[1..])),
            Some((3, Launcher::Slurm))
        );
        // A batch script (no step) is no task of several.
        assert_eq!(Launch::local_rank_from_env(env(&torchrun[2..])), None);
        assert_eq!(
            Launch::local_rank_from_env(env(&[("LOCAL_RANK", "x")])),
            None
        );
    }

    #[test]
    fn given_values_win_and_contradictions_warn() {
        let launch = Launch::from_env(env(&[("RANK", "1"), ("WORLD_SIZE", "4")]));
        let (r, warnings) = Ranks::resolve(GivenRanks::default(), launch, None);
        assert_eq!((r.rank, r.world_size, r.local_world_size), (1, 4, 1));
        assert_eq!(r.source, RankSource::Launcher(Launcher::Torchrun));
        assert_eq!(r.local_source, RankSource::Default);
        assert!(warnings.is_empty());

        let given = GivenRanks {
            rank: Some(0),
            world_size: Some(1),
            local_world_size: None,
        };
        let (r, warnings) = Ranks::resolve(given, launch, None);
        assert_eq!((r.rank, r.world_size, r.source), (0, 1, RankSource::Given));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("world_size=1") && warnings[0].contains("world_size 4"));
        assert!(warnings[0].contains("RANK/WORLD_SIZE"), "{}", warnings[0]);

        let (r, warnings) = Ranks::resolve(given, None, None);
        assert_eq!((r.rank, r.world_size, r.source), (0, 1, RankSource::Given));
        assert!(warnings.is_empty());
        let (r, _) = Ranks::resolve(GivenRanks::default(), None, None);
        let local = Launch::local_from_env(env(&[("LOCAL_WORLD_SIZE", "4")]));
        let (alone, _) = Ranks::resolve(GivenRanks::default(), None, local);
        assert_eq!((alone.world_size, alone.local_world_size), (1, 4));
        assert_eq!(
            (r.rank, r.world_size, r.source),
            (0, 1, RankSource::Default)
        );
        assert_eq!(
            r.to_string(),
            "rank 0 of 1 (default: no launcher), 1 on this node (default: no launcher)"
        );
    }
}
