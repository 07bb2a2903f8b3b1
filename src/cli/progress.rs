//! A spinner on stderr for runs longer than about a second, only when stderr is a terminal
//! (never in pipes, CI logs or tests). It names the stage and the time taken so far.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a run goes before the spinner shows.
const DELAY: Duration = Duration::from_secs(1);

pub struct Progress {
    bar: Option<ProgressBar>,
    /// Set when the run is over; the delayed start checks it under the same lock.
    finished: Arc<Mutex<bool>>,
}

impl Progress {
    pub fn start(stage: &str) -> Progress {
        let finished = Arc::new(Mutex::new(false));
        if !std::io::stderr().is_terminal() {
            return Progress {
                bar: None,
                finished,
            };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template("{spinner} gatefix: {msg} ({elapsed})") {
            bar.set_style(style);
        }
        bar.set_message(stage.to_string());
        let (delayed, flag) = (bar.clone(), finished.clone());
        let _ = std::thread::Builder::new()
            .name("gatefix-progress".into())
            .spawn(move || {
                std::thread::sleep(DELAY);
                if let Ok(done) = flag.lock()
                    && !*done
                {
                    delayed.set_draw_target(ProgressDrawTarget::stderr());
                    delayed.enable_steady_tick(Duration::from_millis(120));
                }
            });
        Progress {
            bar: Some(bar),
            finished,
        }
    }

    pub fn stage(&self, stage: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(stage.to_string());
        }
    }

    /// Clears the spinner before the results are printed.
    pub fn finish(&self) {
        if let Ok(mut done) = self.finished.lock() {
            *done = true;
        }
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
