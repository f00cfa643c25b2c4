//! A small single-threaded notification primitive: tasks wait until a
//! condition holds, and whoever changes the condition calls `notify`.

use std::cell::RefCell;
use std::future::{Future, poll_fn};
use std::task::{Poll, Waker};

/// Wakes the tasks that wait for a condition to change.
#[derive(Default)]
pub(crate) struct Signal {
    wakers: RefCell<Vec<Waker>>,
}

impl Signal {
    /// Wakes every waiting task; each checks its condition again.
    pub(crate) fn notify(&self) {
        let wakers = std::mem::take(&mut *self.wakers.borrow_mut());
        for waker in wakers {
            waker.wake();
        }
    }

    /// Waits until `condition` returns true (checked now and after each `notify`).
    pub(crate) fn wait_until<'a>(&'a self, condition: impl Fn() -> bool + 'a) -> impl Future<Output = ()> + 'a {
        poll_fn(move |cx| {
            if condition() {
                Poll::Ready(())
            } else {
                let mut wakers = self.wakers.borrow_mut();
                if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
                    wakers.push(cx.waker().clone());
                }
                Poll::Pending
            }
        })
    }
}
