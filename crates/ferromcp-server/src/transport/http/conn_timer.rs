//! hyper's timer for one HTTP/1 connection, armed once per connection
//! instead of once per request.
//!
//! hyper bounds the wait for each request head (`header_read_timeout`,
//! also the keep-alive idle bound) with a fresh timer from
//! [`hyper::rt::Timer::sleep_until`], polled whenever the connection waits
//! for its next request and dropped when the head arrives. With tokio's
//! timer each such sleep registers in the timer wheel and deregisters from
//! it again: on a keep-alive connection that is twice per request, plus an
//! allocation and a clock read (about 1.4k of the ~48k instructions of an
//! echo `tools/call`, measured with `bench/profile.sh callgrind`).
//!
//! [`ConnTimer`] gives each connection one tokio timer, shared by the
//! sleeps it hands out. A sleep polled while the shared timer is armed for
//! a deadline no later than its own only refreshes the waker; the shared
//! timer is moved only when it fires before the sleep's own deadline (once
//! per timeout period at most, since each head's deadline is later than
//! the last one) or when a sleep needs an earlier deadline. A sleep is
//! ready exactly when its own deadline has passed: the time is read only
//! when the shared timer fires, so behaviour is that of one timer per
//! sleep, woken no later.
//!
//! Every sleep of a connection is polled by that connection's task, so the
//! waker the shared timer holds is always the right one.

use hyper::rt::{Sleep, Timer};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// A [`Timer`] for one connection (see the module docs).
#[derive(Clone, Default)]
pub(super) struct ConnTimer {
    shared: Arc<Mutex<Option<Pin<Box<tokio::time::Sleep>>>>>,
}

impl ConnTimer {
    /// A timer for a new connection; nothing is armed until a sleep waits.
    pub(super) fn new() -> Self {
        Self::default()
    }
}

impl Timer for ConnTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        self.sleep_until(self.now() + duration)
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        Box::pin(ConnSleep {
            deadline,
            shared: self.shared.clone(),
        })
    }

    fn now(&self) -> Instant {
        // tokio's clock, so a paused test clock applies (as with hyper-util's
        // `TokioTimer`).
        tokio::time::Instant::now().into_std()
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<ConnSleep>() {
            Some(s) => s.get_mut().deadline = new_deadline,
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

/// One sleep of a [`ConnTimer`].
struct ConnSleep {
    deadline: Instant,
    shared: Arc<Mutex<Option<Pin<Box<tokio::time::Sleep>>>>>,
}

impl Future for ConnSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let deadline = tokio::time::Instant::from_std(self.deadline);
        // The lock is only ever taken by this connection's task: never
        // contended; a poisoned one (a panic mid-poll) holds a valid timer.
        let mut slot = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        let timer = slot.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if timer.deadline() > deadline {
            // This sleep ends before the shared timer would fire.
            timer.as_mut().reset(deadline);
        }
        loop {
            match timer.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(()) if tokio::time::Instant::now() >= deadline => {
                    return Poll::Ready(());
                }
                // The shared timer was armed for an earlier sleep's deadline:
                // move it to this one's.
                Poll::Ready(()) => timer.as_mut().reset(deadline),
            }
        }
    }
}

impl Sleep for ConnSleep {}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    fn later(t: &ConnTimer, ms: u64) -> Pin<Box<dyn Sleep>> {
        t.sleep(Duration::from_millis(ms))
    }

    #[tokio::test(start_paused = true)]
    async fn a_sleep_ends_at_its_own_deadline() {
        let t = ConnTimer::new();
        let start = tokio::time::Instant::now();
        later(&t, 500).await;
        assert_eq!(start.elapsed(), Duration::from_millis(500));
    }

    #[tokio::test(start_paused = true)]
    async fn a_later_sleep_is_not_ended_by_the_timer_an_earlier_one_armed() {
        let t = ConnTimer::new();
        let start = tokio::time::Instant::now();
        // The first head's wait arms the shared timer for 100 ms, then the
        // head arrives (the sleep is dropped).
        let mut first = later(&t, 100);
        assert!(first.as_mut().now_or_never().is_none());
        drop(first);
        tokio::time::advance(Duration::from_millis(50)).await;
        // The next head's deadline is 50 + 100 ms: the shared timer fires
        // at 100 ms, which must not end this sleep.
        later(&t, 100).await;
        assert_eq!(start.elapsed(), Duration::from_millis(150));
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_deadline_moves_the_shared_timer_forward() {
        let t = ConnTimer::new();
        let start = tokio::time::Instant::now();
        let mut long = later(&t, 1_000);
        assert!(long.as_mut().now_or_never().is_none());
        later(&t, 10).await;
        assert_eq!(start.elapsed(), Duration::from_millis(10));
        // The long one still ends at its own deadline, not before.
        long.await;
        assert_eq!(start.elapsed(), Duration::from_millis(1_000));
    }

    #[tokio::test(start_paused = true)]
    async fn reset_moves_a_sleep_in_both_directions() {
        let t = ConnTimer::new();
        let start = tokio::time::Instant::now();
        let mut s = later(&t, 100);
        assert!(s.as_mut().now_or_never().is_none());
        t.reset(&mut s, t.now() + Duration::from_millis(300));
        s.as_mut().await;
        assert_eq!(start.elapsed(), Duration::from_millis(300));
        t.reset(&mut s, t.now() + Duration::from_millis(20));
        s.await;
        assert_eq!(start.elapsed(), Duration::from_millis(320));
    }

    #[tokio::test(start_paused = true)]
    async fn sleeps_of_one_connection_do_not_share_with_another() {
        let (a, b) = (ConnTimer::new(), ConnTimer::new());
        let start = tokio::time::Instant::now();
        let mut sa = later(&a, 10);
        assert!(sa.as_mut().now_or_never().is_none());
        later(&b, 40).await;
        assert_eq!(start.elapsed(), Duration::from_millis(40));
        // Already past its deadline.
        assert!(sa.now_or_never().is_some());
    }
}
