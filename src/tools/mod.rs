//! Read-only tools over a crawl directory: [`readseg`] (segments) and
//! [`readlinkdb`] (the linkdb).

pub mod readlinkdb;
pub mod readseg;
