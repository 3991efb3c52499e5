//! Error classes, codes and strings added by the program
//! (`MPI_Add_error_class/code/string`, removed again with
//! `MPI_Remove_error_class/code/string`), and what kind of object each user
//! error handler was created for.

use std::collections::HashMap;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

use mpi_api::abi::*;

use super::error::MpiResult;
use crate::bail;

/// The last predefined error class of the standard's (MPICH numbering).
pub const LAST_PREDEFINED_CLASS: c_int = MPI_ERR_ERRHANDLER;

/// Is `c` a predefined error class: the standard's (0 to
/// [`LAST_PREDEFINED_CLASS`]; MPICH leaves 54 unused but accepts it) or
/// MPICH's MPIX ones (101-105).
pub fn is_predefined_class(c: c_int) -> bool {
    (0..=LAST_PREDEFINED_CLASS).contains(&c) || (MPIX_ERR_PROC_FAILED..=MPIX_ERR_NOREQ).contains(&c)
}

/// First value handed out by `MPI_Add_error_class/code`: above
/// `MPI_ERR_LASTCODE`, as MPICH does (programs such as mpi4py's tests check
/// that added classes are `>= MPI_ERR_LASTCODE`).
pub const FIRST_USER_CODE: c_int = MPI_ERR_LASTCODE + 1;

/// Value of the `MPI_LASTUSEDCODE` attribute; its address is what
/// `MPI_Comm_get_attr` hands out, so it lives in a static. Before any class
/// or code is added it is `MPI_ERR_LASTCODE` (MPICH's value too).
pub static LAST_USED_CODE: AtomicI32 = AtomicI32::new(MPI_ERR_LASTCODE);

/// Object kind a user error handler was created for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandlerKind {
    Comm,
    Win,
    File,
    Session,
}

pub struct ErrorRegistry {
    /// Class of each user code (a user class is also a code of itself).
    class_of: HashMap<c_int, c_int>,
    strings: HashMap<c_int, String>,
    next: c_int,
    /// Kind of each user error handler, by handle index.
    pub kinds: HashMap<u32, HandlerKind>,
    /// Error handler of `MPI_FILE_NULL` (the default for files opened later).
    pub file_default: MPI_Errhandler,
}

impl Default for ErrorRegistry {
    fn default() -> Self {
        ErrorRegistry {
            class_of: HashMap::new(),
            strings: HashMap::new(),
            next: FIRST_USER_CODE,
            kinds: HashMap::new(),
            file_default: MPI_ERRORS_RETURN,
        }
    }
}

impl ErrorRegistry {
    fn alloc(&mut self, class: Option<c_int>) -> MpiResult<c_int> {
        let c = self.next;
        let Some(next) = c.checked_add(1) else {
            bail!(MPI_ERR_OTHER, "no more error codes can be added");
        };
        self.next = next;
        self.class_of.insert(c, class.unwrap_or(c));
        LAST_USED_CODE.store(c, Ordering::Release);
        Ok(c)
    }

    pub fn add_class(&mut self) -> MpiResult<c_int> {
        self.alloc(None)
    }

    pub fn add_code(&mut self, class: c_int) -> MpiResult<c_int> {
        let is_class = is_predefined_class(class) || self.class_of.get(&class) == Some(&class);
        if !is_class {
            bail!(MPI_ERR_ARG, "{class} is not an error class");
        }
        self.alloc(Some(class))
    }

    pub fn set_string(&mut self, code: c_int, s: &str) -> MpiResult<()> {
        if !self.class_of.contains_key(&code) {
            bail!(
                MPI_ERR_ARG,
                "error code {code} was not added with MPI_Add_error_class/code (predefined strings cannot be changed)"
            );
        }
        if s.len() >= MPI_MAX_ERROR_STRING as usize {
            bail!(MPI_ERR_ARG, "error string of {} characters is longer than MPI_MAX_ERROR_STRING - 1", s.len());
        }
        self.strings.insert(code, s.to_string());
        Ok(())
    }

    /// Whether `code` is a user class (not a code of another class).
    fn is_user_class(&self, code: c_int) -> bool {
        self.class_of.get(&code) == Some(&code)
    }

    /// `MPI_Remove_error_class`: only a user class with no codes and no
    /// string left. Values are never handed out again.
    pub fn remove_class(&mut self, class: c_int) -> MpiResult<()> {
        if !self.is_user_class(class) {
            bail!(MPI_ERR_ARG, "{class} is not an error class added with MPI_Add_error_class");
        }
        if let Some(code) = self.class_of.iter().find(|&(&k, &c)| c == class && k != class).map(|(&k, _)| k) {
            bail!(MPI_ERR_ARG, "error class {class} still has the error code {code} (remove the codes first)");
        }
        if self.strings.contains_key(&class) {
            bail!(MPI_ERR_ARG, "error class {class} still has a string (remove it first)");
        }
        self.class_of.remove(&class);
        Ok(())
    }

    /// `MPI_Remove_error_code`: only a user code (not a class) whose
    /// string was removed.
    pub fn remove_code(&mut self, code: c_int) -> MpiResult<()> {
        if !self.class_of.contains_key(&code) || self.is_user_class(code) {
            bail!(MPI_ERR_ARG, "{code} is not an error code added with MPI_Add_error_code");
        }
        if self.strings.contains_key(&code) {
            bail!(MPI_ERR_ARG, "error code {code} still has a string (remove it first)");
        }
        self.class_of.remove(&code);
        Ok(())
    }

    /// `MPI_Remove_error_string`: the string of a user code or class.
    pub fn remove_string(&mut self, code: c_int) -> MpiResult<()> {
        if !self.class_of.contains_key(&code) {
            bail!(MPI_ERR_ARG, "{code} is not an error code or class added by the program");
        }
        if self.strings.remove(&code).is_none() {
            bail!(MPI_ERR_ARG, "error code {code} has no string");
        }
        Ok(())
    }

    /// Class of `code`: predefined classes are their own code.
    pub fn class(&self, code: c_int) -> Option<c_int> {
        if is_predefined_class(code) {
            return Some(code);
        }
        self.class_of.get(&code).copied()
    }

    /// String of a user code or class (empty if none was set).
    pub fn string(&self, code: c_int) -> Option<&str> {
        if !self.class_of.contains_key(&code) {
            return None;
        }
        Some(self.strings.get(&code).map_or("", |s| s.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removal_goes_string_then_codes_then_class() {
        let mut r = ErrorRegistry::default();
        let class = r.add_class().unwrap();
        let code = r.add_code(class).unwrap();
        r.set_string(code, "mine").unwrap();
        r.set_string(class, "my class").unwrap();
        assert_eq!(r.remove_class(class).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(r.remove_code(code).unwrap_err().class, MPI_ERR_ARG);
        r.remove_string(code).unwrap();
        assert_eq!(r.remove_string(code).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(r.remove_code(class).unwrap_err().class, MPI_ERR_ARG);
        r.remove_code(code).unwrap();
        assert_eq!(r.class(code), None);
        assert_eq!(r.remove_class(class).unwrap_err().class, MPI_ERR_ARG);
        r.remove_string(class).unwrap();
        r.remove_class(class).unwrap();
        assert_eq!(r.class(class), None);
        // Predefined classes cannot be removed; values are not reused.
        assert_eq!(r.remove_class(MPI_ERR_ARG).unwrap_err().class, MPI_ERR_ARG);
        assert!(r.add_class().unwrap() > code);
    }

    #[test]
    fn added_values_lie_above_the_last_code() {
        let mut r = ErrorRegistry::default();
        let class = r.add_class().unwrap();
        assert!(class > MPI_ERR_LASTCODE);
        let code = r.add_code(class).unwrap();
        assert!(code > class);
        assert_eq!(r.class(code), Some(class));
        for c in [MPI_T_ERR_NOT_ACCESSIBLE, MPI_ERR_ERRHANDLER, MPIX_ERR_REVOKED] {
            assert_eq!(r.class(c), Some(c));
            assert!(r.add_code(c).is_ok());
        }
        assert_eq!(r.class(MPI_ERR_ERRHANDLER + 1), None);
        assert_eq!(r.class(MPI_ERR_LASTCODE), None);
    }
}
