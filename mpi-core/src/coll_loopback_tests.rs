//! Collective schedules (`coll::sched`, `coll::algo`) run over engines of
//! one process connected by the loopback transport: every layer from the
//! algorithms down to the point-to-point engine, without processes.

use mpi_api::abi::*;

use crate::coll::algo;
use crate::coll::sched::{Reducer, Sched};
use crate::rt::{self, State};

/// Runs one schedule per rank, built by `build`, until all complete; each
/// rank makes a progress round between two steps of its schedule.
fn run(states: &mut [State], mut build: impl FnMut(&mut State, &mut Sched)) {
    let mut scheds: Vec<Sched> = states
        .iter_mut()
        .map(|st| {
            let mut s = Sched::new(st, MPI_COMM_WORLD).expect("schedule");
            build(st, &mut s);
            s.seal(st);
            s
        })
        .collect();
    let mut done = vec![false; states.len()];
    for _ in 0..100_000 {
        for (r, st) in states.iter_mut().enumerate() {
            if !done[r] {
                st.progress();
                done[r] = scheds[r].advance(st);
            }
        }
        if done.iter().all(|&d| d) {
            for s in &scheds {
                s.result().expect("collective succeeded");
            }
            return;
        }
    }
    panic!("the collective did not complete (done: {done:?})");
}

/// Allreduce (sum of ints) with each algorithm the tuning may pick, on a
/// power-of-two and another number of ranks, eager and rendezvous sizes.
#[test]
fn allreduce_sums_over_loopback() {
    for n in [3usize, 4] {
        for alg in [None, Some("recursive_doubling"), Some("ring"), Some("rabenseifner"), Some("reduce_bcast")] {
            for count in [1usize, 1000, 20_000] {
                let mut states = rt::loopback_job(n, crate::layers::PROGRESS_HOOKS).expect("job");
                let sends: Vec<Vec<i32>> =
                    (0..n).map(|r| (0..count).map(|i| (i as i32) * (r as i32 + 1) + r as i32).collect()).collect();
                let mut recvs: Vec<Vec<i32>> = vec![vec![0; count]; n];
                let mut k = 0;
                run(&mut states, |st, s| {
                    st.coll.tune.allreduce = alg.map(str::to_string);
                    let int = st.types.get(MPI_INT).expect("MPI_INT");
                    s.red = Some(Reducer::Builtin { op: MPI_SUM, basic: MPI_INT });
                    let sb = s.input(sends[k].as_ptr() as *const u8, count, &int);
                    let rb = s.output(recvs[k].as_mut_ptr() as *mut u8, count, &int);
                    algo::allreduce(s, &st.coll.tune, sb, rb, count * 4);
                    k += 1;
                });
                let want: Vec<i32> = (0..count).map(|i| (0..n).map(|r| sends[r][i]).sum()).collect();
                for (r, got) in recvs.iter().enumerate() {
                    assert_eq!(got, &want, "rank {r} of {n}, algorithm {alg:?}, {count} ints");
                }
            }
        }
    }
}

/// Broadcast from a root other than 0, of a small and a large message.
#[test]
fn bcast_over_loopback() {
    let n = 5;
    for len in [10usize, 100_000] {
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let mut bufs: Vec<Vec<u8>> = (0..n).map(|r| if r == 2 { data.clone() } else { vec![0; len] }).collect();
        let mut states = rt::loopback_job(n, crate::layers::PROGRESS_HOOKS).expect("job");
        let mut k = 0;
        run(&mut states, |st, s| {
            algo::bcast(s, &st.coll.tune, bufs[k].as_mut_ptr(), len, 2);
            k += 1;
        });
        for (r, b) in bufs.iter().enumerate() {
            assert!(b == &data, "rank {r}, {len} bytes");
        }
    }
}
