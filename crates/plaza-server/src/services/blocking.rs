//! Work on Tokio's blocking pool in a bounded number of slots (upload
//! processing, share image rendering, password hashing). The slot is held
//! by the blocking task itself, not by the future that awaits it: work on
//! the blocking pool cannot be cancelled, so when a request is dropped
//! (its client hung up, its time ran out) the work it started runs on,
//! and its slot stays taken until that work ends. Otherwise every client
//! that hangs up would start one more piece of work past the bound.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

/// A bounded share of the blocking pool.
#[derive(Clone, Debug)]
pub struct BlockingSlots {
    slots: Arc<Semaphore>,
    /// How long a caller waits for a free slot before [`SlotError::Busy`].
    wait: Duration,
}

/// Why [`BlockingSlots::run`] gave no result.
#[derive(Debug, thiserror::Error)]
pub enum SlotError {
    /// No slot freed up within the wait.
    #[error("every slot is busy")]
    Busy,
    /// The work panicked.
    #[error("the work panicked: {0}")]
    Panicked(#[from] tokio::task::JoinError),
}

impl BlockingSlots {
    /// `count` slots (at least one), each waited for at most `wait`.
    pub fn new(count: usize, wait: Duration) -> Self {
        BlockingSlots {
            slots: Arc::new(Semaphore::new(count.max(1))),
            wait,
        }
    }

    /// Runs `work` on the blocking pool in a free slot, waiting up to the
    /// configured time for one.
    pub async fn run<T, F>(&self, work: F) -> Result<T, SlotError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let slot = tokio::time::timeout(self.wait, Arc::clone(&self.slots).acquire_owned())
            .await
            .map_err(|_| SlotError::Busy)?
            .map_err(|_| SlotError::Busy)?;
        let result = tokio::task::spawn_blocking(move || {
            // Freed when the work ends (or unwinds), whoever still waits.
            let _slot = slot;
            work()
        })
        .await?;
        Ok(result)
    }

    /// Slots free right now.
    #[cfg(test)]
    pub(crate) fn available(&self) -> usize {
        self.slots.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Work that runs until `release` is sent, telling `started` first.
    fn held_work(
        slots: &BlockingSlots,
    ) -> (
        tokio::task::JoinHandle<Result<(), SlotError>>,
        tokio::sync::oneshot::Receiver<()>,
        std::sync::mpsc::Sender<()>,
    ) {
        let (started_tx, started) = tokio::sync::oneshot::channel();
        let (release, release_rx) = std::sync::mpsc::channel::<()>();
        let slots = slots.clone();
        let task = tokio::spawn(async move {
            slots
                .run(move || {
                    let _ = started_tx.send(());
                    let _ = release_rx.recv();
                })
                .await
        });
        (task, started, release)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slot_stays_taken_until_the_work_ends_even_when_its_caller_is_gone() {
        let slots = BlockingSlots::new(1, Duration::from_millis(50));
        let (caller, started, release) = held_work(&slots);
        started.await.expect("the work started");
        caller.abort();
        assert!(caller.await.unwrap_err().is_cancelled());
        assert!(
            matches!(slots.run(|| ()).await, Err(SlotError::Busy)),
            "the abandoned work still holds its slot"
        );
        release.send(()).expect("the work still runs");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            match slots.run(|| ()).await {
                Ok(()) => break,
                Err(SlotError::Busy) if tokio::time::Instant::now() < deadline => {}
                Err(error) => panic!("the slot never came back: {error}"),
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn work_waiting_past_its_time_is_refused_as_busy() {
        let slots = BlockingSlots::new(1, Duration::from_millis(50));
        let (caller, started, release) = held_work(&slots);
        started.await.expect("the work started");
        assert!(matches!(slots.run(|| ()).await, Err(SlotError::Busy)));
        release.send(()).expect("the work still runs");
        caller.await.unwrap().expect("the held work ends well");
        assert!(slots.run(|| 7).await.is_ok_and(|value| value == 7));
    }
}
