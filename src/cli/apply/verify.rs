//! `apply --verify CMD`: the user's smoke test, run through `sh -c` in its own process group
//! with a timeout; what it printed last is kept for the ledger.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How many of the command's last lines are kept.
const TAIL_LINES: usize = 20;

/// How long the output is still read once the command has ended or been killed.
const READ_GRACE: Duration = Duration::from_secs(2);

pub struct Failure {
    /// "exited with status 1", "was killed by signal 9", "timed out after 5 s".
    pub what: String,
    pub tail: Vec<String>,
}

pub fn run(command: &str, timeout: Duration) -> Result<(), Failure> {
    eprintln!(
        "gatefix: verify: running `{command}` (timeout {} s)",
        timeout.as_secs()
    );
    // The user's command runs with the memory settings it would have outside gatefix.
    crate::process::transparent_huge_pages(true);
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| Failure {
            what: format!("could not start: {e}"),
            tail: Vec::new(),
        })?;
    let output = Arc::new(Mutex::new(Vec::<u8>::new()));
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|mut stream| {
        let output = output.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 8192];
            while let Ok(n) = stream.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                let mut out = output.lock().expect("no poisoned lock");
                out.extend_from_slice(&buffer[..n]);
                // Keep the end only: a chatty command must not fill memory.
                if out.len() > 1 << 20 {
                    let cut = out.len() - (1 << 19);
                    out.drain(..cut);
                }
            }
        })
    })
    .collect();
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() >= timeout => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    // Whatever the command left running in its group (it would hold the pipes open) is
    // ended with it.
    // SAFETY: kill(2) on the process group the child leads; no memory is touched.
    unsafe {
        libc::kill(-(child.id() as i32), libc::SIGKILL);
    }
    if status.is_none() {
        let _ = child.wait();
    }
    // A process the command started outside its group (`setsid sleep 100 &`) survives the
    // kill and may hold the pipes open for as long as it runs: the output is read for a
    // moment more, then the readers are left behind, not waited for.
    let grace = Instant::now();
    while readers.iter().any(|r| !r.is_finished()) && grace.elapsed() < READ_GRACE {
        std::thread::sleep(Duration::from_millis(20));
    }
    let escaped = readers.iter().any(|r| !r.is_finished());
    for reader in readers.into_iter().filter(|r| r.is_finished()) {
        let _ = reader.join();
    }
    let text = String::from_utf8_lossy(&output.lock().expect("no poisoned lock")).into_owned();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut tail = lines[lines.len().saturating_sub(TAIL_LINES)..].to_vec();
    if escaped {
        tail.push(
            "(gatefix: a process the command started outside its process group still holds its output; not waited for)"
                .to_string(),
        );
    }
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(status) if status.success() => Ok(()),
        Some(status) => Err(Failure {
            what: match (status.code(), status.signal()) {
                (Some(code), _) => format!("exited with status {code}"),
                (None, Some(signal)) => format!("was killed by signal {signal} (a crash)"),
                _ => "failed".into(),
            },
            tail,
        }),
        None => Err(Failure {
            what: format!("timed out after {} s and was killed", timeout.as_secs()),
            tail,
        }),
    }
}
