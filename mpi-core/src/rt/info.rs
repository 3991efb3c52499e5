//! Info objects (chapter 9 of MPI 3.1, "The Info Object"): ordered
//! key/value string lists behind `MPI_Info` handles, and `MPI_INFO_ENV`.

use std::sync::{LazyLock, Mutex};

use mpi_api::abi::*;

use super::error::{MpiError, MpiResult};
use super::slots::Slots;
use crate::bail;

/// Key/value pairs in the order keys were first set.
pub type Pairs = Vec<(String, String)>;

/// The process's info objects. Not part of the runtime's state: MPI 4.0
/// lets a program create and use info objects before `MPI_Init` and after
/// `MPI_Finalize` (section 11.4.1). A leaf lock: nothing that runs under it
/// takes another lock, so it may be taken under the state's lock.
static TABLE: LazyLock<Mutex<InfoTable>> = LazyLock::new(|| Mutex::new(InfoTable::default()));

/// Runs `f` on the info objects.
pub fn with_table<R>(f: impl FnOnce(&mut InfoTable) -> R) -> R {
    // A panic under this lock leaves at worst one half-set key list; the
    // table itself stays consistent, so a poisoned lock is still usable.
    let mut t = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    f(&mut t)
}

/// Contents of info object `h`, or nothing for `MPI_INFO_NULL` (the hints
/// argument of a constructor).
pub fn hints(h: MPI_Info) -> MpiResult<Pairs> {
    with_table(|t| t.get_or_null(h))
}

/// A new info object holding `p`.
pub fn insert(p: Pairs) -> MPI_Info {
    with_table(|t| t.insert(p))
}

#[derive(Default)]
pub struct InfoTable {
    slots: Slots<Pairs>,
    /// Contents of `MPI_INFO_ENV` (read-only).
    pub env: Pairs,
}

impl InfoTable {
    pub fn get(&self, h: MPI_Info) -> MpiResult<&Pairs> {
        if h == MPI_INFO_ENV {
            return Ok(&self.env);
        }
        let i = self.index(h)?;
        Ok(self.slots.get(i).unwrap())
    }

    /// A writable info object (`MPI_INFO_ENV` is read-only).
    pub fn get_mut(&mut self, h: MPI_Info) -> MpiResult<&mut Pairs> {
        if h == MPI_INFO_ENV {
            bail!(MPI_ERR_INFO, "MPI_INFO_ENV cannot be modified");
        }
        let i = self.index(h)?;
        Ok(self.slots.get_mut(i).unwrap())
    }

    /// Contents of `h`, or nothing for `MPI_INFO_NULL`.
    pub fn get_or_null(&self, h: MPI_Info) -> MpiResult<Pairs> {
        if h == MPI_INFO_NULL {
            return Ok(Vec::new());
        }
        self.get(h).cloned()
    }

    fn index(&self, h: MPI_Info) -> MpiResult<u32> {
        if h == MPI_INFO_NULL {
            bail!(MPI_ERR_INFO, "MPI_INFO_NULL is not a valid info object here");
        }
        let i = handle_index(h);
        if handle_kind(h) == HANDLE_KIND_DIRECT && handle_obj(h) == OBJ_INFO && self.slots.get(i).is_some() {
            Ok(i)
        } else {
            Err(MpiError::new(MPI_ERR_INFO, format!("invalid info handle 0x{:08x} (freed or never created)", h as u32)))
        }
    }

    pub fn insert(&mut self, p: Pairs) -> MPI_Info {
        make_handle(HANDLE_KIND_DIRECT, OBJ_INFO, self.slots.insert(p))
    }

    pub fn remove(&mut self, h: MPI_Info) -> MpiResult<()> {
        if h == MPI_INFO_ENV {
            bail!(MPI_ERR_INFO, "MPI_INFO_ENV cannot be freed");
        }
        let i = self.index(h)?;
        self.slots.remove(i);
        Ok(())
    }

    /// Number of live info objects (for leak checks).
    pub fn live(&self) -> usize {
        self.slots.live()
    }
}

/// Sets `key` to `value` (replacing an existing value in place).
pub fn set(p: &mut Pairs, key: &str, value: &str) {
    match p.iter_mut().find(|(k, _)| k == key) {
        Some(kv) => kv.1 = value.to_string(),
        None => p.push((key.to_string(), value.to_string())),
    }
}

pub fn get<'a>(p: &'a Pairs, key: &str) -> Option<&'a str> {
    p.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// Checks a key: not empty and at most `MPI_MAX_INFO_KEY` characters.
pub fn check_key(key: &str) -> MpiResult<&str> {
    if key.is_empty() {
        bail!(MPI_ERR_INFO_KEY, "an info key cannot be empty");
    }
    if key.len() > MPI_MAX_INFO_KEY as usize {
        bail!(
            MPI_ERR_INFO_KEY,
            "info key of {} characters is longer than MPI_MAX_INFO_KEY ({})",
            key.len(),
            MPI_MAX_INFO_KEY
        );
    }
    Ok(key)
}

/// Checks a value: at most `MPI_MAX_INFO_VAL` characters.
pub fn check_value(value: &str) -> MpiResult<&str> {
    if value.len() > MPI_MAX_INFO_VAL as usize {
        bail!(
            MPI_ERR_INFO_VALUE,
            "info value of {} characters is longer than MPI_MAX_INFO_VAL ({})",
            value.len(),
            MPI_MAX_INFO_VAL
        );
    }
    Ok(value)
}

/// The contents of `MPI_INFO_ENV` for this process, and of what
/// `MPI_Info_create_env` makes: how the process was started (MPI 4.0
/// 11.2.1, the keys of `MPI_Comm_spawn`), the same before `MPI_Init`, while
/// the library runs and after `MPI_Finalize`. `args` is the command line
/// (`MPI_Info_create_env`'s `argv`, else the process's own); `world_size`
/// the size of the job when the runtime knows it, else the launcher's
/// `PMI_SIZE` (1 for a singleton). No `thread_level`: that key is the level
/// asked for before the program started, which our launcher has no way to
/// ask for.
pub fn env_pairs(args: Vec<String>, world_size: Option<usize>) -> Pairs {
    let mut p = Pairs::new();
    if let Some(cmd) = args.first() {
        p.push(("command".into(), cmd.clone()));
    }
    if args.len() > 1 {
        p.push(("argv".into(), args[1..].join(" ")));
    }
    let size = world_size.or_else(|| std::env::var("PMI_SIZE").ok().and_then(|v| v.parse().ok())).unwrap_or(1);
    p.push(("maxprocs".into(), size.to_string()));
    p.push(("soft".into(), size.to_string()));
    p.push(("host".into(), super::hostname()));
    p.push(("arch".into(), std::env::consts::ARCH.to_string()));
    if let Ok(d) = std::env::current_dir() {
        p.push(("wdir".into(), d.display().to_string()));
    }
    p
}
