//! The store's SQL statements, prepared once when the store opens and held for the life of
//! its connection.
//!
//! rusqlite's own statement cache (`prepare_cached`) is an LRU map: every use takes the
//! statement out by hashing its SQL and puts it back at the head, relinking the list. In a
//! canister that is about 4,900 instructions of a one-row insert, plus three 4 KiB heap pages
//! written (1,000 instructions each after an update, docs/metering.md §6), and 3,600 of a
//! 13,600-instruction get (the flame graphs of `docs/flamegraphs/`, before this module).
//! [`Statements`] holds a fixed list instead: a lookup compares a few pointers and writes
//! nothing but the statement's borrow flag.

use crate::error::StoreError;
use rusqlite::{Connection, Statement};
use std::cell::{RefCell, RefMut};
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

/// A connection with the statements prepared on it.
///
/// The statements borrow the connection, so the connection is owned through a raw pointer
/// (leaked from a `Box` in [`Self::new`]): moving this struct never claims unique access to
/// it while they point at it, and [`Drop`] and [`Self::close`] finalize the statements before
/// the connection is freed or closed.
pub(crate) struct PreparedConnection {
    /// Statements borrowing `*connection`.
    statements: ManuallyDrop<Statements>,
    /// The connection, from `Box::leak`; only ever borrowed shared until it is freed.
    connection: NonNull<Connection>,
}

/// Statements prepared on one connection, found by their SQL text.
pub(crate) struct Statements {
    /// The statements, by the `'static` SQL text they were prepared from.
    prepared: Vec<(&'static str, RefCell<Statement<'static>>)>,
}

impl PreparedConnection {
    /// Prepares every statement of `sql` on `connection`.
    pub(crate) fn new(connection: Connection, sql: &[&'static str]) -> Result<Self, StoreError> {
        let mut prepared = Self {
            statements: ManuallyDrop::new(Statements {
                prepared: Vec::with_capacity(sql.len()),
            }),
            connection: NonNull::from(Box::leak(Box::new(connection))),
        };
        // SAFETY: the connection lives until `Drop` or `close` frees it, after they have
        // dropped every statement, and nothing borrows it mutably in between; so a shared
        // borrow that the statements keep for as long as they exist is valid. (On an error
        // below, `Drop` cleans up what was prepared so far.)
        let shared: &'static Connection = unsafe { prepared.connection.as_ref() };
        for &text in sql {
            let statement = shared.prepare(text).map_err(|error| {
                StoreError::storage(&format!("preparing the statement {text:?}"), error)
            })?;
            prepared
                .statements
                .prepared
                .push((text, RefCell::new(statement)));
        }
        Ok(prepared)
    }

    /// The connection, for what is not one of the prepared statements.
    pub(crate) fn connection(&self) -> &Connection {
        // SAFETY: the connection lives as long as `self` (see `new`), and is only ever
        // borrowed shared.
        unsafe { self.connection.as_ref() }
    }

    /// The prepared statements.
    pub(crate) fn statements(&self) -> &Statements {
        &self.statements
    }

    /// Finalizes the statements, then closes the connection.
    pub(crate) fn close(self) -> Result<(), StoreError> {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped, so the statements and the connection are released
        // once, here, in the order `Drop` uses; the connection came from `Box::leak`.
        let connection = unsafe {
            ManuallyDrop::drop(&mut this.statements);
            *Box::from_raw(this.connection.as_ptr())
        };
        connection
            .close()
            .map_err(|(_, error)| StoreError::storage("closing the database", error))
    }
}

impl Drop for PreparedConnection {
    fn drop(&mut self) {
        // SAFETY: the statements go first, as they borrow the connection, which came from
        // `Box::leak` and is freed exactly once, here (`close` skips this).
        unsafe {
            ManuallyDrop::drop(&mut self.statements);
            drop(Box::from_raw(self.connection.as_ptr()));
        }
    }
}

impl Statements {
    /// The statement prepared from `sql`, borrowed until the returned guard drops. Fails if
    /// `sql` was not in the list the connection was prepared with, or if the statement is in
    /// use already (both mistakes of this crate, reported rather than panicking).
    pub(crate) fn get<'a>(
        &'a self,
        sql: &'static str,
    ) -> Result<RefMut<'a, Statement<'static>>, StoreError> {
        let found = self
            .prepared
            .iter()
            .find(|(text, _)| std::ptr::eq(*text, sql))
            .or_else(|| self.prepared.iter().find(|(text, _)| *text == sql));
        match found {
            Some((_, statement)) => statement.try_borrow_mut().map_err(|_| {
                StoreError::storage(&format!("running the statement {sql:?}"), "already in use")
            }),
            None => Err(StoreError::storage(
                &format!("running the statement {sql:?}"),
                "not prepared at open",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SELECT: &str = "SELECT 1";

    #[test]
    fn a_statement_is_found_by_its_text_and_lent_once_at_a_time() {
        crate::sqlite_shared::page_cache::install();
        let connection = Connection::open_in_memory().unwrap();
        let db = PreparedConnection::new(connection, &[SELECT]).unwrap();
        let statements = db.statements();
        let one: i64 = statements
            .get(SELECT)
            .unwrap()
            .query_row([], |row| row.get(0))
            .unwrap();
        assert_eq!(one, 1);
        // The same text from elsewhere (another `'static` string) finds it too.
        let copy: &'static str = Box::leak(SELECT.to_string().into_boxed_str());
        let held = statements.get(copy).unwrap();
        assert!(matches!(
            statements.get(SELECT),
            Err(StoreError::Storage { .. })
        ));
        drop(held);
        assert!(statements.get(SELECT).is_ok());
        assert!(matches!(
            statements.get("SELECT 2"),
            Err(StoreError::Storage { .. })
        ));
        db.close().unwrap();
    }

    #[test]
    fn a_statement_that_does_not_prepare_is_an_error() {
        crate::sqlite_shared::page_cache::install();
        let connection = Connection::open_in_memory().unwrap();
        assert!(matches!(
            PreparedConnection::new(connection, &["SELECT * FROM nowhere"]),
            Err(StoreError::Storage { .. })
        ));
    }
}
