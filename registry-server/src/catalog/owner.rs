//! `/users/{login}`: who a publisher is here, and what they own.

use axum::extract::{Path, State};
use maud::html;

use super::layout::{self, Frame};
use super::{PageError, PageResult, html_page};
use crate::db;
use crate::state::AppState;

pub async fn owner(State(state): State<AppState>, Path(login): Path<String>) -> PageResult {
    let found = if db::users::valid_login(&login) { db::catalog::owner(&state.db, &login).await? } else { None };
    let Some(owner) = found else {
        return Err(PageError::not_found(
            format!("No user {login}"),
            html! {
                p { "No user " code { (login) } " has published here." }
            },
        ));
    };
    let title = format!("Packages of {}", owner.login);
    let content = html! {
        h1 { (owner.login) }
        p.muted { "Publishing here since " (layout::date(&owner.joined)) "; owns " (owner.packages.len())
            " package" @if owner.packages.len() != 1 { "s" } "." }
        (layout::package_list(&owner.packages, "updated"))
    };
    let frame = Frame { title: &title, description: None, query: "", own_search: false };
    Ok(html_page(&state, layout::page(&frame, content)))
}
