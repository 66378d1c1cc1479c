//! `io`: file writes with fsync. Each worker rewrites a file bounded to SIZE
//! (default 64 MiB) block by block (default 64 KiB), calling fsync(2) after
//! every block. The file never has a name: it is created with O_TMPFILE (or,
//! where the file system lacks it, created and unlinked at once), so nothing is
//! left behind after a normal end, a signal, a panic or SIGKILL.

use crate::error::{Error, Result};
use crate::load::args::{ensure, key_size, object, set, ArgResult, Args, LoadShape, MAX_WORKERS};
use crate::load::worker::{Body, Pool, Reading, WorkerCtx};
use crate::load::{About, Load, LoadContext, Progress};
use serde_json::{json, Map, Value};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// `io[:N][:SIZE][:block=SIZE][:dir=PATH]`: N workers writing and fsyncing a file bounded to SIZE.
#[derive(Debug, Clone, PartialEq)]
pub struct IoParams {
    pub workers: usize,
    pub size: u64,
    pub block: u64,
    pub dir: Option<PathBuf>,
}

pub const DEFAULT_IO_SIZE: u64 = 64 << 20;
pub const DEFAULT_IO_BLOCK: u64 = 64 << 10;

impl IoParams {
    /// Every parameter, for the result.
    pub fn to_map(&self) -> Map<String, Value> {
        object(json!({
            "workers": self.workers, "size_bytes": self.size, "block_bytes": self.block,
            "dir": self.dir.as_ref().map(|d| d.display().to_string()),
        }))
    }
}

pub const KIND: LoadShape = LoadShape::new("io", "io:1, io:1:16M or io:1:block=4K").sized();

pub fn parse(mut a: Args<'_>) -> ArgResult<IoParams> {
    let (mut block, mut dir) = (None, None);
    for (k, v) in std::mem::take(&mut a.keys) {
        match k {
            "workers" => a.set_count(k, v, MAX_WORKERS)?,
            "size" => set(&mut a.size, key_size(k, v)?, "size")?,
            "block" => set(&mut block, key_size(k, v)?, k)?,
            "dir" => {
                if v.is_empty() {
                    return Err("dir= is empty".into());
                }
                set(&mut dir, PathBuf::from(v), k)?
            }
            _ => return Err(a.unknown_key(k, "workers, size, block, dir")),
        }
    }
    let block = block.unwrap_or(DEFAULT_IO_BLOCK);
    ensure((512..=64 << 20).contains(&block), || {
        format!("block={block}: a block is 512 bytes to 64M")
    })?;
    let size = a.size.unwrap_or(DEFAULT_IO_SIZE.max(block));
    ensure(size >= block, || {
        format!("the file bound ({size} bytes) is smaller than a block ({block} bytes)")
    })?;
    Ok(IoParams {
        workers: a.count.unwrap_or(1),
        size,
        block,
        dir,
    })
}

pub struct IoLoad {
    params: IoParams,
    dir: PathBuf,
    anonymous: &'static str,
    pool: Option<Pool>,
}

impl IoLoad {
    pub fn new(params: IoParams) -> Self {
        IoLoad {
            dir: params.dir.clone().unwrap_or_else(default_dir),
            params,
            anonymous: "O_TMPFILE",
            pool: None,
        }
    }
}

/// `$TMPDIR`, else /var/tmp (on disk on most systems, unlike a tmpfs /tmp), else /tmp.
pub fn default_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("TMPDIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let var_tmp = Path::new("/var/tmp");
    if var_tmp.is_dir() {
        return var_tmp.to_path_buf();
    }
    PathBuf::from("/tmp")
}

/// A file in `dir` without a name. Returns the file and how it was made anonymous.
pub fn anonymous_file(dir: &Path, worker: usize) -> std::io::Result<(File, &'static str)> {
    match OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE)
        .open(dir)
    {
        Ok(f) => return Ok((f, "O_TMPFILE")),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::EINVAL)
            ) => {}
        Err(e) => return Err(e),
    }
    let (secs, nanos) = crate::sys::clock::wall_clock();
    let path = dir.join(format!(
        ".rtlat-io-{}-{worker}-{secs}{nanos:09}",
        std::process::id()
    ));
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok((f, "unlinked at creation"))
}

fn body(ctx: &WorkerCtx, file: File, size: u64, block: usize) -> std::result::Result<(), String> {
    let data: Vec<u8> = (0..block).map(|i| (i * 31 + ctx.index) as u8).collect();
    let (mut off, mut ops) = (0u64, 0u64);
    while !ctx.stopping() {
        file.write_all_at(&data, off)
            .map_err(|e| format!("write failed: {e}"))?;
        file.sync_all().map_err(|e| format!("fsync failed: {e}"))?;
        ops += 1;
        ctx.tally.publish(ops, 0);
        off += block as u64;
        if off + block as u64 > size {
            off = 0;
        }
    }
    Ok(())
}

impl Load for IoLoad {
    fn about(&self) -> About {
        About::bytes("io", self.params.workers, self.params.to_map())
            .with("dir", self.dir.display().to_string())
            .with("file", self.anonymous)
    }
    fn start(&mut self, ctx: &LoadContext) -> Result<()> {
        let mut bodies: Vec<Body> = Vec::new();
        for i in 0..self.params.workers {
            let (file, how) = anonymous_file(&self.dir, i).map_err(|e| {
                Error::env(format!(
                    "io load: cannot create a file in {}: {e}; choose a writable directory with io:dir=PATH",
                    self.dir.display()
                ))
            })?;
            self.anonymous = how;
            let (size, block) = (self.params.size, self.params.block as usize);
            bodies.push(Box::new(move |ctx: &WorkerCtx| {
                body(ctx, file, size, block)
            }));
        }
        self.pool = Some(Pool::start("ld-io", ctx.cpus.as_deref(), bodies));
        Ok(())
    }
    /// Bytes written counted from the blocks.
    fn read(&mut self, reading: Reading) -> Progress {
        let t = Pool::read(&mut self.pool, reading);
        let bytes = t.ops * self.params.block;
        Progress::of(t).with_bytes(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_file_has_no_name_but_works() {
        let dir = tempfile::tempdir().unwrap();
        let (mut f, _) = anonymous_file(dir.path(), 0).unwrap();
        f.write_all_at(b"hello", 0).unwrap();
        f.sync_all().unwrap();
        let mut s = String::new();
        f.read_to_string(&mut s).unwrap();
        assert_eq!(s, "hello");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
