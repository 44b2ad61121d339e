//! How much disk the store may take: the default size cap that collection
//! keeps it under, and the free-space reserve a spill stops at.
//!
//! The spill asks [`FreeSpace`] (through `stream::spill::SpaceGuard`) before
//! every further 64 MiB: when writing them would leave less free space on
//! the store's filesystem than the reserve, the spill stops and the run
//! reports a failed spill (envelope printed, `full_output` null, exit 1),
//! rather than filling the disk that the command, the system and the next
//! run need. A spill under 64 MiB is never stopped by it.

use std::io;
use std::sync::Arc;

use super::format_size;
use super::sys::StoreDir;
use crate::stream::spill::SpaceGuard;

/// The store's size cap when `OUTBOX_MAX_STORE_BYTES` is unset: 2 GiB.
pub const DEFAULT_MAX_STORE_BYTES: u64 = 2 << 30;
/// The reserve is at least this much...
pub const MIN_RESERVE_BYTES: u64 = 1 << 30;
/// ...or this share of the filesystem, whichever is larger.
pub const RESERVE_PERCENT: u64 = 5;

/// Free space a spill leaves on a filesystem of `total` bytes:
/// `OUTBOX_MIN_FREE_BYTES` when given, else max(1 GiB, 5%).
pub fn reserve(total: u64, explicit: Option<u64>) -> u64 {
    explicit.unwrap_or_else(|| MIN_RESERVE_BYTES.max(total / 100 * RESERVE_PERCENT))
}

/// The reserve, checked on the store's own descriptor (fstatvfs).
pub(crate) struct FreeSpace {
    pub(crate) dir: Arc<StoreDir>,
    pub(crate) explicit: Option<u64>,
}

impl SpaceGuard for FreeSpace {
    fn check(&mut self, written: u64, next: u64) -> io::Result<()> {
        // A filesystem that cannot say how full it is: keep writing (a full
        // disk still fails the write itself).
        let Ok((avail, total)) = self.dir.space() else { return Ok(()) };
        let reserve = reserve(total, self.explicit);
        if avail.saturating_sub(next) >= reserve {
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::StorageFull,
            format!(
                "stopped after {} to keep free space on the store's filesystem: {} is free and the reserve is {} \
                 (the larger of 1 GiB and 5%, or OUTBOX_MIN_FREE_BYTES); free some space (outbox gc, outbox rm) \
                 or lower OUTBOX_MIN_FREE_BYTES",
                format_size(written),
                format_size(avail),
                format_size(reserve)
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_a_gibibyte_or_five_percent() {
        assert_eq!(reserve(10 << 30, None), 1 << 30);
        assert_eq!(reserve(100 << 30, None), 5 << 30);
        assert_eq!(reserve(100 << 30, Some(0)), 0);
    }

    #[test]
    fn a_spill_that_would_eat_into_the_reserve_is_stopped() {
        let (_tmp, store) = crate::store::testutil::store();
        let mut g = FreeSpace { dir: store.dir.clone(), explicit: Some(u64::MAX / 2) };
        let e = g.check(64 << 20, 64 << 20).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert!(e.to_string().contains("reserve"), "{e}");
        let mut g = FreeSpace { dir: store.dir.clone(), explicit: Some(0) };
        assert!(g.check(64 << 20, 64 << 20).is_ok());
    }
}
