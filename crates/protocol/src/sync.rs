//! Locks that outlive a panic: a thread that panicked while holding a lock
//! leaves the data as it was, and tern goes on with it rather than failing
//! every later caller. The one place that choice is made.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// [`Mutex::lock`] that takes the data back from a poisoned lock.
pub trait LockExt<T: ?Sized> {
    /// The guard, poisoned or not.
    fn lock_or_recover(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> LockExt<T> for Mutex<T> {
    fn lock_or_recover(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// [`RwLock::read`] and [`RwLock::write`] that take the data back from a poisoned lock.
pub trait RwLockExt<T: ?Sized> {
    /// The read guard, poisoned or not.
    fn read_or_recover(&self) -> RwLockReadGuard<'_, T>;
    /// The write guard, poisoned or not.
    fn write_or_recover(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> RwLockExt<T> for RwLock<T> {
    fn read_or_recover(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write_or_recover(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_gives_its_data_back() {
        let m = std::sync::Arc::new(Mutex::new(1));
        let m2 = m.clone();
        let _ = std::thread::spawn(move || {
            let _g = m2.lock_or_recover();
            panic!("poison it");
        })
        .join();
        assert!(m.is_poisoned());
        assert_eq!(*m.lock_or_recover(), 1);
        let rw = RwLock::new(2);
        *rw.write_or_recover() = 3;
        assert_eq!(*rw.read_or_recover(), 3);
    }
}
