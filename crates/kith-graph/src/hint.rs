//! Hints to the CPU that change how fast code runs, never what it computes.

/// Asks the CPU to bring `value` into its caches (nothing for `None`, or off x86-64): for a
/// loop that knows which scattered entry it reads a few steps ahead.
#[inline(always)]
pub fn prefetch<T>(value: Option<&T>) {
    #[cfg(target_arch = "x86_64")]
    if let Some(value) = value {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch is a hint that reads nothing and cannot fault; the address is
        // a reference's.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(value).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
