//! A group commit: requests hand their rows to one writer task that stores
//! them in batches, one transaction each, and each request waits until the
//! batch holding its rows has committed. Under load the rows that arrive
//! while one batch commits form the next, so a commit's cost (and, on
//! SQLite, the cache every reading connection drops after a commit) is
//! shared by many requests.
//!
//! Memory is bounded: the queue holds at most the `max_queued` rows it was
//! made with; a submission that finds it full is refused ([`Refused::Busy`])
//! and the caller decides (503, or writing alone). At shutdown the writer
//! stores everything queued before it stops.
//!
//! One submission's rows never fail another's: when the database refuses a
//! batch of several submissions (rather than being out of reach), the
//! batch is written again in halves, and so on, until the submission at
//! fault stands alone and is answered with the error; the others are
//! stored. A batch of n submissions takes at most 2n − 1 transactions so.

use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::runtime::Handle;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Why rows were not stored.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("the queue is full")]
    Busy,
    #[error("the writer is stopped")]
    Stopped,
    #[error("the rows could not be stored: {0}")]
    Failed(String),
}

/// A batch the writer did not store.
#[derive(Debug)]
pub struct Unwritten<T> {
    pub error: String,
    /// The rows, handed back when the database refused them, so that a
    /// part of the batch may be stored without the rows at fault; none
    /// when it was out of reach, where a smaller batch fares no better.
    pub rows: Option<Vec<T>>,
}

struct Submission<T> {
    rows: Vec<T>,
    /// Holds the rows' places in the queue until they are written.
    _places: OwnedSemaphorePermit,
    done: oneshot::Sender<Result<(), String>>,
}

/// The queue in front of one writer task.
pub struct GroupCommit<T> {
    sender: mpsc::UnboundedSender<Submission<T>>,
    receiver: Mutex<Option<mpsc::UnboundedReceiver<Submission<T>>>>,
    places: Arc<Semaphore>,
    /// Places in the queue in all.
    max_queued: usize,
    /// Rows per transaction at most (a submission is never split).
    max_batch: usize,
}

impl<T: Send + 'static> GroupCommit<T> {
    pub fn new(max_queued: usize, max_batch: usize) -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        GroupCommit {
            sender,
            receiver: Mutex::new(Some(receiver)),
            places: Arc::new(Semaphore::new(max_queued)),
            max_queued,
            max_batch: max_batch.max(1),
        }
    }

    /// Rows queued or being written now.
    pub fn queued(&self) -> usize {
        self.max_queued
            .saturating_sub(self.places.available_permits())
    }

    /// Takes places in the queue for `count` rows, or refuses when it is full.
    pub fn reserve(&self, count: usize) -> Result<OwnedSemaphorePermit, Refused> {
        let count = u32::try_from(count).map_err(|_| Refused::Busy)?;
        Arc::clone(&self.places)
            .try_acquire_many_owned(count)
            .map_err(|_| Refused::Busy)
    }

    /// Queues `rows` (their places taken with [`GroupCommit::reserve`]) and
    /// waits until they are committed.
    pub async fn submit(&self, rows: Vec<T>, places: OwnedSemaphorePermit) -> Result<(), Refused> {
        let (done, committed) = oneshot::channel();
        self.sender
            .send(Submission {
                rows,
                _places: places,
                done,
            })
            .map_err(|_| Refused::Stopped)?;
        committed
            .await
            .map_err(|_| Refused::Stopped)?
            .map_err(Refused::Failed)
    }

    /// The writer: stores queued rows with `write`, one batch per call,
    /// until `stop` fires, then stores what is still queued and returns.
    /// Runs once per queue; a second call returns at once.
    pub async fn run<W, F>(&self, write: W, stop: CancellationToken)
    where
        W: Fn(Vec<T>) -> F,
        F: Future<Output = Result<(), Unwritten<T>>>,
    {
        self.run_answering_on(None, write, stop).await;
    }

    /// [`GroupCommit::run`] for a writer on a thread of its own: each
    /// batch's answers go to `requests` (the runtime the requests wait on)
    /// as one task, which wakes the requests from inside it. Sent from the
    /// writer's thread, every answer woke its request across threads: 60
    /// µs for a batch of 25, a twelfth of the analytics writer's batch.
    pub async fn run_answering_on<W, F>(
        &self,
        requests: Option<Handle>,
        write: W,
        stop: CancellationToken,
    ) where
        W: Fn(Vec<T>) -> F,
        F: Future<Output = Result<(), Unwritten<T>>>,
    {
        let taken = self
            .receiver
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        let Some(mut receiver) = taken else {
            return;
        };
        loop {
            let first = tokio::select! {
                biased;
                submission = receiver.recv() => submission,
                () = stop.cancelled() => None,
            };
            let Some(first) = first else { break };
            let batch = self.fill_batch(first, &mut receiver);
            write_batch(&write, batch, requests.as_ref()).await;
        }
        // Refuse new submissions, then store every one already queued.
        receiver.close();
        while let Some(first) = receiver.recv().await {
            let batch = self.fill_batch(first, &mut receiver);
            write_batch(&write, batch, requests.as_ref()).await;
        }
    }

    /// `first` and whatever else is queued, up to `max_batch` rows.
    fn fill_batch(
        &self,
        first: Submission<T>,
        receiver: &mut mpsc::UnboundedReceiver<Submission<T>>,
    ) -> Vec<Submission<T>> {
        let mut rows = first.rows.len();
        let mut batch = vec![first];
        while rows < self.max_batch {
            let Ok(next) = receiver.try_recv() else { break };
            rows += next.rows.len();
            batch.push(next);
        }
        batch
    }
}

/// Writes `batch`, answering each submission once its rows are stored or
/// refused; a batch the database refuses is split until the submission at
/// fault stands alone.
async fn write_batch<T, W, F>(write: &W, batch: Vec<Submission<T>>, requests: Option<&Handle>)
where
    T: Send + 'static,
    W: Fn(Vec<T>) -> F,
    F: Future<Output = Result<(), Unwritten<T>>>,
{
    let mut parts = vec![batch];
    while let Some(mut part) = parts.pop() {
        let sizes: Vec<usize> = part
            .iter()
            .map(|submission| submission.rows.len())
            .collect();
        let rows: Vec<T> = part
            .iter_mut()
            .flat_map(|submission| std::mem::take(&mut submission.rows))
            .collect();
        let outcome = match write(rows).await {
            Ok(()) => Ok(()),
            Err(Unwritten {
                error,
                rows: Some(rows),
            }) if part.len() > 1 => {
                tracing::warn!(
                    %error,
                    submissions = part.len(),
                    "a batch was refused; its submissions are written again in halves"
                );
                let mut rows = rows.into_iter();
                for (submission, size) in part.iter_mut().zip(sizes) {
                    submission.rows = rows.by_ref().take(size).collect();
                }
                let second_half = part.split_off(part.len() / 2);
                parts.push(second_half);
                parts.push(part);
                continue;
            }
            Err(unwritten) => Err(unwritten.error),
        };
        answer(part, outcome, requests);
    }
}

/// Answers every submission of `part` with `outcome`: on `requests`, the
/// runtime the requests wait on, when given.
fn answer<T: Send + 'static>(
    part: Vec<Submission<T>>,
    outcome: Result<(), String>,
    requests: Option<&Handle>,
) {
    let answer = move || {
        for submission in part {
            // A request that gave up (its client left) no longer listens.
            let _ = submission.done.send(outcome.clone());
        }
    };
    match requests {
        Some(runtime) => drop(runtime.spawn(async move { answer() })),
        None => answer(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Batches = Arc<Mutex<Vec<Vec<u32>>>>;

    type Written = std::future::Ready<Result<(), Unwritten<u32>>>;

    /// A writer that records each batch it is given.
    fn recording(batches: &Batches) -> impl Fn(Vec<u32>) -> Written {
        let batches = Arc::clone(batches);
        move |rows| {
            batches.lock().unwrap().push(rows);
            std::future::ready(Ok(()))
        }
    }

    /// A database that refuses every batch holding `bad`, handing its rows
    /// back, and records each batch it is given and each it stores.
    fn refusing(bad: u32, tried: &Batches, stored: &Batches) -> impl Fn(Vec<u32>) -> Written {
        let (tried, stored) = (Arc::clone(tried), Arc::clone(stored));
        move |rows| {
            tried.lock().unwrap().push(rows.clone());
            if rows.contains(&bad) {
                return std::future::ready(Err(Unwritten {
                    error: format!("row {bad} breaks a constraint"),
                    rows: Some(rows),
                }));
            }
            stored.lock().unwrap().push(rows);
            std::future::ready(Ok(()))
        }
    }

    #[test]
    fn a_full_queue_refuses_places() {
        let queue: GroupCommit<u32> = GroupCommit::new(3, 10);
        let held = queue.reserve(2).expect("room for two");
        assert!(matches!(queue.reserve(2), Err(Refused::Busy)));
        drop(held);
        assert!(queue.reserve(3).is_ok(), "places come back once freed");
    }

    /// Queues `row` as a request would, without waiting for its commit.
    fn queue_row(queue: &GroupCommit<u32>, row: u32) -> oneshot::Receiver<Result<(), String>> {
        queue_rows(queue, vec![row])
    }

    /// Queues `rows` as one request would, without waiting for their commit.
    fn queue_rows(
        queue: &GroupCommit<u32>,
        rows: Vec<u32>,
    ) -> oneshot::Receiver<Result<(), String>> {
        let (done, committed) = oneshot::channel();
        let places = queue.reserve(rows.len()).expect("room");
        queue
            .sender
            .send(Submission {
                rows,
                _places: places,
                done,
            })
            .expect("queued");
        committed
    }

    #[tokio::test]
    async fn queued_rows_are_committed_together_up_to_the_batch_size() {
        let queue = GroupCommit::new(100, 4);
        let answers: Vec<_> = (0..6).map(|row| queue_row(&queue, row)).collect();
        let batches = Batches::default();
        let stop = CancellationToken::new();
        stop.cancel();
        queue.run(recording(&batches), stop).await;
        for answer in answers {
            assert_eq!(answer.await.expect("answered"), Ok(()));
        }
        assert_eq!(*batches.lock().unwrap(), vec![vec![0, 1, 2, 3], vec![4, 5]]);
        assert_eq!(queue.places.available_permits(), 100, "places freed");
    }

    #[test]
    fn a_writer_apart_answers_on_the_requests_runtime() {
        let requests = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let writer = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let queue = GroupCommit::new(10, 10);
        let mut answers: Vec<_> = (0..3).map(|row| queue_row(&queue, row)).collect();
        let stop = CancellationToken::new();
        stop.cancel();
        writer.block_on(queue.run_answering_on(
            Some(requests.handle().clone()),
            |_| std::future::ready(Ok(())),
            stop,
        ));
        assert!(
            answers.iter_mut().all(|answer| answer.try_recv().is_err()),
            "nothing is answered before the requests' runtime runs"
        );
        requests.block_on(async {
            for answer in answers {
                assert_eq!(answer.await.expect("answered"), Ok(()));
            }
        });
    }

    #[tokio::test]
    async fn a_database_out_of_reach_fails_the_whole_batch_at_once() {
        let queue = GroupCommit::new(10, 10);
        let answers: Vec<_> = (0..3).map(|row| queue_row(&queue, row)).collect();
        let stop = CancellationToken::new();
        stop.cancel();
        let writes = Arc::new(Mutex::new(0));
        let counted = Arc::clone(&writes);
        queue
            .run(
                move |_| {
                    *counted.lock().unwrap() += 1;
                    std::future::ready(Err(Unwritten {
                        error: "connection refused".to_owned(),
                        rows: None,
                    }))
                },
                stop,
            )
            .await;
        for answer in answers {
            assert_eq!(
                answer.await.expect("answered"),
                Err("connection refused".to_owned())
            );
        }
        assert_eq!(*writes.lock().unwrap(), 1, "no retry that cannot help");
    }

    #[tokio::test]
    async fn a_submission_refused_for_its_rows_fails_alone() {
        let queue = GroupCommit::new(100, 100);
        let submissions = [
            vec![1, 2],
            vec![3],
            vec![4, 5, 6],
            vec![7],
            vec![8, 9],
            vec![10],
        ];
        let answers: Vec<_> = submissions
            .iter()
            .map(|rows| queue_rows(&queue, rows.clone()))
            .collect();
        let (tried, stored) = (Batches::default(), Batches::default());
        let stop = CancellationToken::new();
        stop.cancel();
        queue.run(refusing(5, &tried, &stored), stop).await;
        for (rows, answer) in submissions.iter().zip(answers) {
            let expected = if rows.contains(&5) {
                Err("row 5 breaks a constraint".to_owned())
            } else {
                Ok(())
            };
            assert_eq!(answer.await.expect("answered"), expected, "{rows:?}");
        }
        let mut kept: Vec<u32> = stored.lock().unwrap().concat();
        kept.sort_unstable();
        assert_eq!(kept, vec![1, 2, 3, 7, 8, 9, 10], "each row stored once");
        assert_eq!(
            *tried.lock().unwrap(),
            vec![
                vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
                vec![1, 2, 3, 4, 5, 6],
                vec![1, 2],
                vec![3, 4, 5, 6],
                vec![3],
                vec![4, 5, 6],
                vec![7, 8, 9, 10],
            ],
            "halved until the submission at fault stands alone"
        );
        assert_eq!(queue.places.available_permits(), 100, "places freed");
    }

    #[tokio::test]
    async fn a_stopped_writer_stores_what_was_queued_first() {
        let queue = GroupCommit::new(10, 10);
        let committed = queue_row(&queue, 7);
        let stop = CancellationToken::new();
        stop.cancel();
        let batches = Batches::default();
        queue.run(recording(&batches), stop).await;
        assert_eq!(committed.await.expect("answered"), Ok(()));
        assert_eq!(*batches.lock().unwrap(), vec![vec![7]]);
        let places = queue.reserve(1).expect("room");
        assert!(matches!(
            queue.submit(vec![8], places).await,
            Err(Refused::Stopped)
        ));
    }
}
