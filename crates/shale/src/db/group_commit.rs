//! Group commit: the queue and leader hand-off of the write path, apart from
//! what a commit does.
//!
//! Writers call [`GroupCommit::write`] with a request. The writer at the front
//! of the queue, when no other leader is active, becomes the *leader*: it takes
//! a group (a prefix of the queue, its own request first), commits it, hands
//! every other writer of the group (the *followers*) its request back with its
//! share of the commit, applies its own request while the followers apply
//! theirs, waits until they are done, publishes the group, and hands every
//! follower the result. What commit, apply and publish do is a [`GroupSteps`]
//! implementation: the database's WAL record, memtable inserts and visible
//! sequence number (`write.rs`), or fake steps that record what happened (the
//! model tests below).
//!
//! # Concurrency
//!
//! * One mutex (the *queue lock*) guards the queue, the hand-offs and the leader
//!   flag, and one condition variable signals their changes. Every change that
//!   a thread may wait for (a result or a share stored under its ticket, the
//!   front of the queue or the leader flag, for writers; the count of pending
//!   applies reaching zero, for the leader) is made under the lock and followed
//!   by `notify_all` before the lock is released, and every wait re-checks its
//!   condition in a loop, so a wake-up is never lost.
//! * At most one leader at a time: `leader_active` is set by the writer that
//!   takes a group and cleared only after the group's results are handed out.
//!   [`GroupCommit::exclusive`] takes the same role without a group (the
//!   database's flush switches memtables there), so its closure never overlaps
//!   a group.
//! * Tickets are consecutive and the queue is FIFO, so the writers waiting hold
//!   tickets `next_ticket - waiting.len() .. next_ticket`, a group is a run of
//!   consecutive tickets, and groups commit in queue order.
//! * No step runs under the queue lock except [`GroupSteps::cost`] and
//!   [`GroupSteps::share`], which must be cheap and take no lock. `commit`,
//!   `apply`, `publish` and the `exclusive` closure may block and take other
//!   locks: in the database those come after the queue in the lock order.
//! * A follower gets its share only after its group's commit succeeded, and the
//!   leader publishes only after every follower reported its apply done (the
//!   count of pending applies is back to zero), so whatever publish makes
//!   visible covers the whole group and nothing is visible before it.
//! * A failed commit hands the same error to every writer of its group; nothing
//!   of the group is applied or published.
//! * Every writer returns exactly one result: the leader its own, a follower
//!   the one the leader stored under its ticket.
//!
//! The `model_check` tests (feature `shuttle`) check these rules over many
//! thread interleavings; see `docs/design.md`.

use std::collections::{HashMap, VecDeque};

use crate::error::Result;
use crate::sync::{Condvar, Mutex};

/// What a commit group goes through; [`GroupCommit`] decides who runs each step
/// and when.
pub(crate) trait GroupSteps<R> {
    /// The leader's state from commit to publish.
    type Committed;
    /// What one writer needs to apply its request once its group is committed.
    type Share;

    /// Cost of a request (bytes), to bound a group. Runs under the queue lock.
    fn cost(&self, request: &R) -> usize;

    /// Upper bound on the summed cost of a group, except that a group always
    /// holds at least its leader's request.
    fn max_group_cost(&self) -> usize;

    /// Commits a group (the leader's request first, then the followers' in queue
    /// order). Runs on the leader, without the queue lock.
    fn commit(&self, group: &[R]) -> Result<Self::Committed>;

    /// The share of the next request of a committed group: called once per
    /// request, in group order, the leader's first. Runs under the queue lock.
    fn share(&self, committed: &mut Self::Committed, request: &R) -> Self::Share;

    /// Applies one request with its share, on the thread of the writer that
    /// made the request, in parallel with the rest of the group.
    fn apply(&self, request: &R, share: Self::Share);

    /// Makes the group's effects visible. Runs on the leader after every apply
    /// of the group.
    fn publish(&self, committed: Self::Committed);
}

/// The queue of writers and the leader hand-off; `R` is a writer's request and
/// `S` its share of a commit.
pub(crate) struct GroupCommit<R, S> {
    queue: Mutex<Queue<R, S>>,
    cv: Condvar,
}

/// The state under the queue lock.
struct Queue<R, S> {
    /// Ticket of the next writer to enqueue.
    next_ticket: u64,
    /// Requests waiting for a leader; the last has ticket `next_ticket - 1`.
    waiting: VecDeque<R>,
    /// Follower ticket -> its request and share: the group is committed, the
    /// follower applies its own request.
    shares: HashMap<u64, (R, S)>,
    /// Followers of the current group that have not finished applying.
    pending: usize,
    /// Follower ticket -> the result of its group.
    done: HashMap<u64, Result<()>>,
    /// A leader (or an [`GroupCommit::exclusive`] caller) is at work.
    leader_active: bool,
    /// An empty vector kept from the last group, so that taking a group does
    /// not allocate.
    spare: Vec<R>,
}

impl<R, S> Queue<R, S> {
    /// Ticket of the writer at the front of the queue (`next_ticket`, which no
    /// writer holds, when the queue is empty).
    fn front_ticket(&self) -> u64 {
        self.next_ticket - self.waiting.len() as u64
    }
}

impl<R, S> GroupCommit<R, S> {
    /// An empty queue.
    pub(crate) fn new() -> Self {
        GroupCommit {
            queue: Mutex::new(Queue {
                next_ticket: 0,
                waiting: VecDeque::new(),
                shares: HashMap::new(),
                pending: 0,
                done: HashMap::new(),
                leader_active: false,
                spare: Vec::new(),
            }),
            cv: Condvar::new(),
        }
    }

    /// Queues `request` and returns once its group is committed, applied and
    /// published (or its commit failed), leading the group if this writer is at
    /// the front of the queue.
    pub(crate) fn write<T>(&self, steps: &T, request: R) -> Result<()>
    where
        T: GroupSteps<R, Share = S>,
    {
        self.write_ticketed(steps, request).1
    }

    /// [`write`](Self::write), also returning the writer's ticket (its place in
    /// the queue).
    fn write_ticketed<T>(&self, steps: &T, request: R) -> (u64, Result<()>)
    where
        T: GroupSteps<R, Share = S>,
    {
        let mut q = self.queue.lock();
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        q.waiting.push_back(request);
        loop {
            if let Some(result) = q.done.remove(&ticket) {
                return (ticket, result);
            }
            if let Some((request, share)) = q.shares.remove(&ticket) {
                // A follower of a committed group: apply our own request.
                drop(q);
                steps.apply(&request, share);
                drop(request);
                q = self.queue.lock();
                q.pending -= 1;
                if q.pending == 0 {
                    self.cv.notify_all();
                }
                continue;
            }
            if !q.leader_active && q.front_ticket() == ticket {
                break;
            }
            self.cv.wait(&mut q);
        }

        // The leader: take the longest prefix of the queue within the cost
        // bound, at least our own request.
        q.leader_active = true;
        let mut group = std::mem::take(&mut q.spare);
        let max = steps.max_group_cost();
        let mut cost = 0usize;
        while let Some(front) = q.waiting.front() {
            let c = steps.cost(front);
            if !group.is_empty() && cost.saturating_add(c) > max {
                break;
            }
            cost = cost.saturating_add(c);
            if let Some(r) = q.waiting.pop_front() {
                group.push(r);
            }
        }
        drop(q);
        let followers = group.len().saturating_sub(1) as u64;

        let result = self.lead(steps, ticket, &mut group);

        // Our own request (or, after a failed commit, the whole group) is
        // dropped outside the lock.
        group.clear();
        let mut q = self.queue.lock();
        for t in ticket + 1..=ticket + followers {
            q.done.insert(t, result.clone());
        }
        q.leader_active = false;
        q.spare = group;
        self.cv.notify_all();
        (ticket, result)
    }

    /// Commits `group` (whose first ticket is `ticket`), has every writer apply
    /// its request, and publishes. On success `group` is left with the leader's
    /// request only; the followers' went back to them.
    fn lead<T>(&self, steps: &T, ticket: u64, group: &mut Vec<R>) -> Result<()>
    where
        T: GroupSteps<R, Share = S>,
    {
        let mut committed = steps.commit(group)?;
        // The leader's request is first: a group is never empty.
        let own_share = group.first().map(|own| steps.share(&mut committed, own));
        let followers = group.len().saturating_sub(1);
        if followers > 0 {
            let mut q = self.queue.lock();
            q.pending = followers;
            for (t, request) in (ticket + 1..).zip(group.drain(1..)) {
                let share = steps.share(&mut committed, &request);
                q.shares.insert(t, (request, share));
            }
            self.cv.notify_all();
        }
        if let (Some(own), Some(share)) = (group.first(), own_share) {
            steps.apply(own, share);
        }
        if followers > 0 {
            let mut q = self.queue.lock();
            while q.pending > 0 {
                self.cv.wait(&mut q);
            }
        }
        steps.publish(committed);
        Ok(())
    }

    /// Runs `f` as if it were a leader with no group: after the current group
    /// (if any) is done and before the next one starts.
    pub(crate) fn exclusive<O>(&self, f: impl FnOnce() -> O) -> O {
        let mut q = self.queue.lock();
        while q.leader_active {
            self.cv.wait(&mut q);
        }
        q.leader_active = true;
        drop(q);
        let out = f();
        let mut q = self.queue.lock();
        q.leader_active = false;
        self.cv.notify_all();
        out
    }
}

#[cfg(test)]
mod tests {
    //! The protocol driven with fake steps that record what happened and check
    //! the module's rules as they go and at the end. By default the scenarios
    //! run on OS threads (a stress test); with the `shuttle` feature the
    //! `model_check` tests run them under shuttle's schedulers.

    use std::sync::Arc;

    use super::*;
    use crate::error::Error;
    use crate::sync::thread;

    /// A writer's request: who made it and on which thread.
    struct Req {
        id: usize,
        cost: usize,
        sync: bool,
        thread: thread::ThreadId,
    }

    #[derive(Debug)]
    enum Event {
        Commit { ids: Vec<usize>, ok: bool },
        Apply { id: usize },
        Publish { ids: Vec<usize> },
        Exclusive,
    }

    /// Who is at work: a group between its commit's start and its end, then
    /// between its successful commit and its publish, or an `exclusive` closure.
    #[derive(Debug, PartialEq)]
    enum Busy {
        Idle,
        Committing(Vec<usize>),
        Committed(Vec<usize>),
        Exclusive,
    }

    struct Log {
        events: Vec<Event>,
        busy: Busy,
    }

    /// Fake steps. A group whose requests include `fail` fails its commit.
    struct Recorder {
        log: Mutex<Log>,
        fail: Option<usize>,
        max_cost: usize,
    }

    /// The fake's committed group: its writers and the next share to hand.
    struct Group {
        ids: Vec<usize>,
        next: usize,
    }

    fn injected() -> Error {
        Error::InvalidArgument("injected commit failure".into())
    }

    impl GroupSteps<Req> for Recorder {
        type Committed = Group;
        /// Position of the request in its group.
        type Share = usize;

        fn cost(&self, request: &Req) -> usize {
            request.cost
        }

        fn max_group_cost(&self) -> usize {
            self.max_cost
        }

        fn commit(&self, group: &[Req]) -> Result<Group> {
            let ids: Vec<usize> = group.iter().map(|r| r.id).collect();
            assert!(!ids.is_empty(), "empty group");
            assert_eq!(
                group[0].thread,
                thread::current().id(),
                "leader's own first"
            );
            let cost: usize = group.iter().map(|r| r.cost).sum();
            assert!(
                ids.len() == 1 || cost <= self.max_cost,
                "group {ids:?} over the cost bound"
            );
            {
                let mut log = self.log.lock();
                assert_eq!(log.busy, Busy::Idle, "commit of {ids:?} overlaps");
                log.busy = Busy::Committing(ids.clone());
            }
            // A synced commit is slow: more points where others may run.
            if group.iter().any(|r| r.sync) {
                thread::yield_now();
                thread::yield_now();
            }
            let ok = self.fail.is_none_or(|f| !ids.contains(&f));
            let mut log = self.log.lock();
            assert_eq!(log.busy, Busy::Committing(ids.clone()), "commit");
            log.events.push(Event::Commit {
                ids: ids.clone(),
                ok,
            });
            if ok {
                log.busy = Busy::Committed(ids.clone());
                Ok(Group { ids, next: 0 })
            } else {
                log.busy = Busy::Idle;
                Err(injected())
            }
        }

        fn share(&self, committed: &mut Group, request: &Req) -> usize {
            let at = committed.next;
            assert_eq!(committed.ids.get(at), Some(&request.id), "shares in order");
            committed.next += 1;
            at
        }

        fn apply(&self, request: &Req, share: usize) {
            assert_eq!(
                request.thread,
                thread::current().id(),
                "applied by its writer"
            );
            let mut log = self.log.lock();
            let Busy::Committed(ids) = &log.busy else {
                panic!("apply of {} outside a committed group", request.id);
            };
            assert_eq!(ids.get(share), Some(&request.id), "share of another writer");
            let since_commit = log
                .events
                .iter()
                .rev()
                .take_while(|e| !matches!(e, Event::Commit { .. }));
            for e in since_commit {
                assert!(
                    !matches!(e, Event::Apply { id } if *id == request.id),
                    "{} applied twice",
                    request.id
                );
            }
            log.events.push(Event::Apply { id: request.id });
        }

        fn publish(&self, committed: Group) {
            let mut log = self.log.lock();
            assert_eq!(committed.next, committed.ids.len(), "a share per writer");
            assert_eq!(log.busy, Busy::Committed(committed.ids.clone()), "publish");
            let mut applied: Vec<usize> = log
                .events
                .iter()
                .rev()
                .take_while(|e| !matches!(e, Event::Commit { .. }))
                .filter_map(|e| match e {
                    Event::Apply { id } => Some(*id),
                    _ => None,
                })
                .collect();
            applied.sort_unstable();
            let mut ids = committed.ids.clone();
            ids.sort_unstable();
            assert_eq!(applied, ids, "publish after every apply of the group");
            log.events.push(Event::Publish { ids: committed.ids });
            log.busy = Busy::Idle;
        }
    }

    impl Recorder {
        /// The body of an `exclusive` call: no group may be in flight.
        fn exclusive_body(&self) {
            {
                let mut log = self.log.lock();
                assert_eq!(log.busy, Busy::Idle, "exclusive overlaps a group");
                log.busy = Busy::Exclusive;
            }
            thread::yield_now();
            let mut log = self.log.lock();
            assert_eq!(
                log.busy,
                Busy::Exclusive,
                "a group started inside exclusive"
            );
            log.busy = Busy::Idle;
            log.events.push(Event::Exclusive);
        }
    }

    /// One run: a writer per entry of `writers` ((cost, sync)), `exclusive`
    /// more threads calling [`GroupCommit::exclusive`], commits of groups
    /// holding writer `fail` failing. Checks the outcome once all are done.
    fn scenario(writers: &[(usize, bool)], max_cost: usize, fail: Option<usize>, exclusive: usize) {
        let gc: Arc<GroupCommit<Req, usize>> = Arc::new(GroupCommit::new());
        let rec = Arc::new(Recorder {
            log: Mutex::new(Log {
                events: Vec::new(),
                busy: Busy::Idle,
            }),
            fail,
            max_cost,
        });
        let mut handles = Vec::new();
        for (id, &(cost, sync)) in writers.iter().enumerate() {
            let (gc, rec) = (gc.clone(), rec.clone());
            handles.push(thread::spawn(move || {
                let req = Req {
                    id,
                    cost,
                    sync,
                    thread: thread::current().id(),
                };
                gc.write_ticketed(&*rec, req)
            }));
        }
        let others: Vec<_> = (0..exclusive)
            .map(|_| {
                let (gc, rec) = (gc.clone(), rec.clone());
                thread::spawn(move || gc.exclusive(|| rec.exclusive_body()))
            })
            .collect();
        let results: Vec<(u64, Result<()>)> = handles
            .into_iter()
            .map(|h| h.join().expect("writer"))
            .collect();
        for h in others {
            h.join().expect("exclusive caller");
        }
        check_outcome(&gc, &rec, &results, exclusive);
    }

    /// Every writer got one result, that of its group; groups took the queue in
    /// ticket order with none lost or repeated; every successful group was
    /// applied and published once; the queue is back to idle.
    fn check_outcome(
        gc: &GroupCommit<Req, usize>,
        rec: &Recorder,
        results: &[(u64, Result<()>)],
        exclusive: usize,
    ) {
        let n = results.len();
        let log = rec.log.lock();
        assert_eq!(log.busy, Busy::Idle);
        let mut order = Vec::new();
        let mut group_ok = vec![None; n];
        let (mut applies, mut publishes, mut exclusives, mut successes) = (0, 0, 0, 0);
        let mut last_commit: &[usize] = &[];
        for e in &log.events {
            match e {
                Event::Commit { ids, ok } => {
                    last_commit = ids;
                    for &id in ids {
                        order.push(results[id].0);
                        assert!(group_ok[id].is_none(), "writer {id} committed twice");
                        group_ok[id] = Some(*ok);
                    }
                    successes += usize::from(*ok);
                }
                Event::Apply { .. } => applies += 1,
                Event::Publish { ids } => {
                    assert_eq!(ids, last_commit, "publish of the group last committed");
                    publishes += 1;
                }
                Event::Exclusive => exclusives += 1,
            }
        }
        let tickets: Vec<u64> = (0..n as u64).collect();
        assert_eq!(order, tickets, "groups cover the queue in order");
        for (id, (_, result)) in results.iter().enumerate() {
            match group_ok[id] {
                Some(true) => assert!(result.is_ok(), "writer {id}: {result:?}"),
                Some(false) => assert!(
                    matches!(result, Err(Error::InvalidArgument(m)) if m.contains("injected")),
                    "writer {id} of a failed group: {result:?}"
                ),
                None => panic!("writer {id} was never committed"),
            }
        }
        let committed = group_ok.iter().filter(|ok| **ok == Some(true)).count();
        assert_eq!(applies, committed, "one apply per committed writer");
        assert_eq!(publishes, successes, "one publish per committed group");
        assert_eq!(exclusives, exclusive);
        drop(log);

        let q = gc.queue.lock();
        assert_eq!(q.next_ticket, n as u64);
        assert!(q.waiting.is_empty(), "writers left in the queue");
        assert!(q.shares.is_empty(), "shares never taken");
        assert!(q.done.is_empty(), "results never taken");
        assert_eq!(q.pending, 0);
        assert!(!q.leader_active);
    }

    /// Three writers, one of them synced, groups of at most two; the commit of
    /// the group holding writer 1 fails.
    fn three_writers_one_failing() {
        scenario(&[(1, false), (1, true), (1, false)], 2, Some(1), 0);
    }

    /// Two writers with a flush-like `exclusive` caller; one writer is too big
    /// to share a group.
    fn two_writers_and_exclusive() {
        scenario(&[(3, true), (1, false)], 2, None, 1);
    }

    /// Three writers that fit in one group, a failing one among them, and an
    /// `exclusive` caller.
    fn three_writers_one_group() {
        scenario(&[(1, false), (1, false), (1, true)], 8, Some(2), 1);
    }

    #[test]
    #[cfg(not(feature = "shuttle"))]
    fn stress_on_os_threads() {
        for _ in 0..200 {
            three_writers_one_failing();
            two_writers_and_exclusive();
            three_writers_one_group();
        }
    }

    #[cfg(feature = "shuttle")]
    mod model_check {
        use crate::sync::check_schedules;

        #[test]
        fn group_commit_three_writers_one_failing() {
            check_schedules(super::three_writers_one_failing, 3);
        }

        #[test]
        fn group_commit_two_writers_and_exclusive() {
            check_schedules(super::two_writers_and_exclusive, 3);
        }

        #[test]
        fn group_commit_three_writers_one_group() {
            check_schedules(super::three_writers_one_group, 3);
        }
    }
}
