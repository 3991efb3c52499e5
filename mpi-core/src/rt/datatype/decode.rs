//! Decoding a derived type (`MPI_Type_get_envelope`, `MPI_Type_get_contents`
//! and their `_c` forms): the arguments its constructor was given, as the
//! `int` or the large-count query reports them.

use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::{Contents, Dtype, TypeTable};
use crate::bail;
use crate::rt::error::MpiResult;

/// The arguments of a constructor in the arrays of the query.
pub struct Decoded {
    pub integers: Vec<i64>,
    pub addresses: Vec<i64>,
    /// Only for the `_c` query of a type a `_c` constructor made.
    pub large_counts: Vec<i64>,
    pub types: Vec<Arc<Dtype>>,
}

/// What `MPI_Type_get_envelope(_c)` reports: how many values of each kind
/// the contents hold, and the combiner.
pub struct Envelope {
    pub integers: i64,
    pub addresses: i64,
    pub large_counts: i64,
    pub datatypes: i64,
    pub combiner: c_int,
}

impl Contents {
    /// (integers, addresses, large counts) as the `_c` (`large_query`) or
    /// the `int` query reports them.
    fn decoded(&self, large_query: bool) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
        if large_query && self.large {
            let (i, l) = self.large_split();
            (i, Vec::new(), l)
        } else {
            (self.ints.clone(), self.aints.clone(), Vec::new())
        }
    }
}

impl TypeTable {
    /// The envelope of `dt` (committed or not).
    pub fn envelope(&self, dt: MPI_Datatype, large_query: bool) -> MpiResult<Envelope> {
        let t = self.lookup(dt)?;
        Ok(match &t.contents {
            None => Envelope { integers: 0, addresses: 0, large_counts: 0, datatypes: 0, combiner: MPI_COMBINER_NAMED },
            Some(c) => {
                let (i, a, l) = c.decoded(large_query);
                Envelope {
                    integers: i.len() as i64,
                    addresses: a.len() as i64,
                    large_counts: l.len() as i64,
                    datatypes: c.types.len() as i64,
                    combiner: c.combiner,
                }
            }
        })
    }

    /// The contents of derived type `dt` (an error for a predefined one).
    pub fn contents(&self, dt: MPI_Datatype, large_query: bool) -> MpiResult<Decoded> {
        let t = self.lookup(dt)?;
        let Some(c) = &t.contents else {
            bail!(MPI_ERR_TYPE, "MPI_Type_get_contents of a predefined datatype (combiner MPI_COMBINER_NAMED)");
        };
        let (integers, addresses, large_counts) = c.decoded(large_query);
        Ok(Decoded { integers, addresses, large_counts, types: c.types.clone() })
    }
}
