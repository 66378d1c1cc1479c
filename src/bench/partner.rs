//! The other side of a two-system run (`net ping --serve-on`, `irq host
//! --target`), started on a board before the run: the run's finisher stops
//! it and merges its result, and trouble with it decides the run's outcome.

use crate::bench::threads::Slot;
use crate::engine::Finisher;
use crate::error::{Outcome, Result};
use crate::remote::peer::{Board, Fetched, Peer};
use crate::result::RunResult;
use serde_json::Value;

/// A run's partner on a board, if it has one. On an early error (the
/// finisher never ran) it is dropped with this, which ends it.
pub struct Partner {
    peer: Slot<Peer>,
    /// What it is to the run (`server`, `target`), for the notes.
    role: &'static str,
    /// The board it runs on.
    board: String,
    /// What went wrong with it, as the finisher found it.
    trouble: Slot<String>,
}

impl Partner {
    /// rtlat with `args` on `board` (none: no partner), the run's `role`
    /// (`server`, `target`), ready once it prints `ready`.
    pub fn start(
        board: Option<&Board>,
        role: &'static str,
        args: impl FnOnce() -> Vec<String>,
        ready: &str,
    ) -> Result<Partner> {
        let peer = board.map(|b| Peer::start(b, &args(), ready)).transpose()?;
        Ok(Partner {
            peer: Slot::new(peer),
            role,
            board: board.map(|b| b.ssh.target.to_string()).unwrap_or_default(),
            trouble: Slot::default(),
        })
    }

    /// The run's finisher: `own`, then the partner stopped (once the
    /// measurement has ended, before the summary and the last save) and its
    /// result merged into the run's by `merge` (given the board's name);
    /// what went wrong with it is noted.
    pub fn finisher(
        &self,
        own: Finisher,
        merge: impl FnOnce(&Value, &str, &mut RunResult) + Send + 'static,
    ) -> Finisher {
        let (peer, trouble) = (self.peer.clone(), self.trouble.clone());
        let (role, board) = (self.role, self.board.clone());
        Box::new(move |r: &mut RunResult| {
            own(r);
            let Some(p) = peer.take() else {
                return;
            };
            let Fetched { result, trouble: t } = p.stop();
            match result {
                Some(theirs) => {
                    merge(&theirs, &board, r);
                    if let Some(t) = t {
                        r.notes.push(format!("the {role} on {board}: {t}"));
                        trouble.put(t);
                    }
                }
                None => {
                    let why = t.unwrap_or_default();
                    r.notes.push(format!("the {role} on {board}: {why}"));
                    trouble.put(why);
                }
            }
        })
    }

    /// The run's outcome: `measured`, unless something went wrong with the
    /// partner.
    pub fn outcome(self, measured: Outcome) -> Outcome {
        match self.trouble.take() {
            Some(t) => Outcome::EnvironmentFailed(t),
            None => measured,
        }
    }
}

// A result to finish comes from the renderers' test data.
#[cfg(all(test, feature = "host-tools"))]
mod tests {
    use super::*;

    #[test]
    fn without_a_partner_the_finisher_is_the_runs_own_and_the_outcome_stands() {
        let p = Partner::start(None, "server", Vec::new, "ready").expect("none");
        let f = p.finisher(
            Box::new(|r: &mut RunResult| r.notes.push("own".into())),
            |_, _, r| r.notes.push("merged".into()),
        );
        let mut r = crate::render::testdata::empty();
        f(&mut r);
        assert_eq!(r.notes, ["own"]);
        assert!(matches!(p.outcome(Outcome::Success), Outcome::Success));
    }
}
