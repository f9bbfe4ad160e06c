//! `pi-harness cassette review`: the pending re-recordings (`*.cassette.jsonl.new`, written
//! by `record --record-mode all` when a cassette changed) shown as the normalized diff
//! against the cassette they would replace, then accepted (the pending file becomes the
//! cassette) or rejected (it is deleted; the cassette stays byte for byte), one by one on
//! stdin or all at once (`--accept-all`, `--reject-all`), as `cargo insta review` does.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::exit::{EXIT_OK, EXIT_USAGE};
use crate::record_mode::{existing, normalized_diff, pending_path, target_of_pending, variants};

/// `pi-harness cassette review`'s options.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  pi-harness cassette review tests/cassettes            # ask for each: accept, reject or skip\n  pi-harness cassette review --accept-all tests/cassettes\n  pi-harness cassette review --reject-all               # below the current directory\n\nA pending file is written by `pi-harness record --record-mode all` (and the test helpers'\nrecord mode `all`) when a re-recording differs from the cassette once timings and ids are\nleft out. Answers are read from stdin, one line each: a (accept), r (reject), s (skip)."
)]
pub struct ReviewArgs {
    /// Directories searched for pending files (recursively), pending files, or cassettes
    /// (their pending file); default: the current directory.
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Accept every pending file without asking.
    #[arg(long, conflicts_with = "reject_all")]
    accept_all: bool,
    /// Reject (delete) every pending file without asking.
    #[arg(long)]
    reject_all: bool,
}

/// What was decided for one pending file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Accept,
    Reject,
    Skip,
}

/// Every pending file below `paths`, sorted.
fn pending_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out)?;
        } else if target_of_pending(p).is_some() && std::fs::symlink_metadata(p).is_ok() {
            // Whatever it is: what is not a pending file is said when it is reached.
            out.push(p.clone());
        } else if p.is_file() {
            for cand in variants(p).iter().map(|c| pending_path(c)) {
                if std::fs::symlink_metadata(&cand).is_ok() {
                    out.push(cand);
                }
            }
        } else {
            anyhow::bail!("{}: no such file or directory", p.display());
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Pending files below `dir`; hidden directories, `target` and `node_modules` are skipped.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if entry.file_type()?.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                walk(&path, out)?;
            }
        } else if target_of_pending(&path).is_some() {
            out.push(path);
        }
    }
    Ok(())
}

/// Why `p` cannot be reviewed as a pending file, if it cannot: a symbolic link (accepted, it
/// would put a link where the cassette is, and a later write to the cassette would go
/// through it), or not a regular file (a FIFO blocked the review, a device never ends).
/// `record --record-mode all` writes a regular file.
fn not_pending(p: &Path) -> Option<String> {
    match std::fs::symlink_metadata(p) {
        Err(e) => Some(format!("{}: cannot read it: {e}", p.display())),
        Ok(m) if m.file_type().is_symlink() => Some(format!(
            "{}: a symbolic link, not a pending file (record --record-mode all writes a regular file); left alone",
            p.display()
        )),
        Ok(m) if !m.is_file() => Some(format!(
            "{}: not a regular file (a FIFO, a device or a socket), not a pending file; left alone",
            p.display()
        )),
        Ok(_) => None,
    }
}

/// Show one pending file: what it replaces and the normalized diff.
fn show(pending: &Path, old: Option<&Path>) -> anyhow::Result<()> {
    println!("pending  {}", pending.display());
    match old {
        None => {
            // Nothing to diff with: it is read through once, so that what is accepted is a
            // cassette (a record at a time, whatever its size).
            let mut reader = pi_cassette::CassetteReader::open(pending)?;
            while let Some(r) = reader.next_ref() {
                r?;
            }
            println!("  a new cassette (nothing to replace)");
        }
        Some(old) => {
            println!("  replaces {}", old.display());
            let diff = normalized_diff(old, pending)?;
            if diff.is_empty() {
                println!("  (the same once timings and ids are left out)");
            } else {
                println!("  - {}\n  + the re-recording", old.display());
                print!("{diff}");
            }
        }
    }
    Ok(())
}

/// Ask on stderr, read one answer line from `input`; `None` at its end.
fn ask(input: &mut dyn BufRead) -> anyhow::Result<Option<Decision>> {
    loop {
        eprint!("accept, reject or skip? [a/r/s] ");
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            eprintln!();
            return Ok(None);
        }
        match line.trim().to_ascii_lowercase().as_str() {
            "a" | "accept" | "y" | "yes" => return Ok(Some(Decision::Accept)),
            "r" | "reject" | "n" | "no" => return Ok(Some(Decision::Reject)),
            "s" | "skip" | "" => return Ok(Some(Decision::Skip)),
            other => eprintln!("`{other}`: answer a, r or s"),
        }
    }
}

/// Carry out a decision on `pending`, which would replace `target`.
fn apply(decision: Decision, pending: &Path, target: &Path) -> anyhow::Result<()> {
    match decision {
        Decision::Accept => {
            std::fs::rename(pending, target)
                .map_err(|e| anyhow::anyhow!("{}: cannot write it: {e}", target.display()))?;
            // The cassette in another form (plain, gzip, zstd) is the one just replaced.
            for stale in variants(target).into_iter().filter(|v| v != target) {
                if stale.is_file() {
                    std::fs::remove_file(&stale).map_err(|e| {
                        anyhow::anyhow!("{}: cannot remove it: {e}", stale.display())
                    })?;
                }
            }
            println!("accepted {}", target.display());
        }
        Decision::Reject => {
            std::fs::remove_file(pending)
                .map_err(|e| anyhow::anyhow!("{}: cannot remove it: {e}", pending.display()))?;
            println!("rejected {}", pending.display());
        }
        Decision::Skip => println!("skipped  {}", pending.display()),
    }
    Ok(())
}

/// `pi-harness cassette review`.
pub fn review_command(args: &ReviewArgs) -> anyhow::Result<i32> {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let pending = pending_files(&paths)?;
    if pending.is_empty() {
        println!("review: no pending cassettes");
        return Ok(EXIT_OK);
    }
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let (mut accepted, mut rejected, mut skipped, mut failed) = (0, 0, 0, 0);
    let mut answers_left = true;
    for p in &pending {
        // One file that cannot be reviewed is said, in one line, and the review goes on.
        let reviewed = match not_pending(p) {
            Some(why) => Err(anyhow::anyhow!(why)),
            None => review_one(args, p, &mut input, &mut answers_left),
        };
        match reviewed {
            Ok(Decision::Accept) => accepted += 1,
            Ok(Decision::Reject) => rejected += 1,
            Ok(Decision::Skip) => skipped += 1,
            Err(e) => {
                eprintln!("error: {}", crate::one_line(&crate::error::with_causes(&e)));
                failed += 1;
            }
        }
    }
    if failed == 0 {
        println!("review: {accepted} accepted, {rejected} rejected, {skipped} left pending");
        return Ok(EXIT_OK);
    }
    println!(
        "review: {accepted} accepted, {rejected} rejected, {skipped} left pending, {failed} could not be reviewed (left alone)"
    );
    Ok(EXIT_USAGE)
}

/// Show one pending file, decide (by the options or an answer on `input`) and carry it out.
fn review_one(
    args: &ReviewArgs,
    p: &Path,
    input: &mut dyn BufRead,
    answers_left: &mut bool,
) -> anyhow::Result<Decision> {
    let target = target_of_pending(p).expect("a pending file's name");
    let old = existing(&target);
    show(p, old.as_deref())?;
    let decision = if args.accept_all {
        Decision::Accept
    } else if args.reject_all {
        Decision::Reject
    } else if *answers_left {
        ask(input)?.unwrap_or_else(|| {
            *answers_left = false;
            Decision::Skip
        })
    } else {
        Decision::Skip
    };
    apply(decision, p, &target)?;
    Ok(decision)
}
