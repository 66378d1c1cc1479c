//! The worst cases a watched thread's intervals gave, as the reader keeps
//! them: the `worst` longest of the thread, or, for a tap whose records
//! name their threads (`rtlat watch`'s, one per CPU), the `worst` longest
//! of each thread named.

use crate::result::Explained;

/// Cases explained, worst first, with whose each is.
#[derive(Default)]
pub struct Best {
    cases: Vec<Explained>,
    tids: Vec<i32>,
}

impl Best {
    pub fn len(&self) -> usize {
        self.cases.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cases.is_empty()
    }

    /// The least latency kept (0: none kept).
    pub fn least(&self) -> u64 {
        self.cases.last().map_or(0, |b| b.latency_ns)
    }

    /// Whether an interval of `lat` of thread `tid` would be kept among
    /// `worst` (of that thread, when `each`).
    pub fn wants(&self, tid: i32, lat: u64, worst: usize, each: bool) -> bool {
        if !each {
            return self.cases.len() < worst || self.least() < lat;
        }
        let mine = self
            .cases
            .iter()
            .zip(&self.tids)
            .filter(|&(_, &id)| id == tid);
        let (n, least) = mine.fold((0, u64::MAX), |(n, l), (b, _)| (n + 1, l.min(b.latency_ns)));
        n < worst || least < lat
    }

    /// Keep `case` of thread `tid`; the least beyond `worst` (of that
    /// thread, when `each`) goes.
    pub fn keep(&mut self, case: Explained, tid: i32, worst: usize, each: bool) {
        let at = self
            .cases
            .partition_point(|b| b.latency_ns >= case.latency_ns);
        self.cases.insert(at, case);
        self.tids.insert(at, tid);
        let mine = |&id: &i32| !each || id == tid;
        // Worst first: the last of them is the least.
        if self.tids.iter().filter(|id| mine(id)).count() > worst {
            if let Some(last) = self.tids.iter().rposition(mine) {
                self.cases.remove(last);
                self.tids.remove(last);
            }
        }
    }

    /// The cases, worst first.
    pub fn take(&mut self) -> Vec<Explained> {
        self.tids.clear();
        std::mem::take(&mut self.cases)
    }
}
