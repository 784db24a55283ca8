//! The scripted hosts (`WebSpec::scripted`): pages whose links and text exist only
//! after their scripts ran, for JavaScript rendering (`[fetch.render]`).
//!
//! [`APP_HOSTS`] are two hosts with the same pages: a crawl renders the first and not
//! the second, so what only scripts build must show up on the first alone. Each home
//! page is a shell (`<div id="app">`, no link) whose scripts:
//! - `/app.js` fetches `/api/items.json` (XHR) and writes a paragraph and one link per
//!   item (`/item1.html`, `/item2.html`);
//! - `http://cdn.web.test/lib.js` (a third-party host) writes a line of text;
//! - `http://ads.web.test/ad.js` would add a link to `/from-ad.html`: a crawl blocks
//!   that host (`fetch.render.block_hosts`), so nothing may ever reach it;
//! - `/private/track.js` would add a link to `/from-tracker.html`: robots.txt
//!   disallows `/private/`, so it must never be requested;
//! - an inline script sets a line of text after a timer.
//!
//! Each item page sets its own title and text from a script; `/busy.html` runs a
//! script that never ends. The server's request log
//! then shows what the browser asked for: nothing of `ads.web.test`, nothing under
//! `/private/`, robots.txt of `cdn.web.test` before its script, and every host's
//! requests spaced by the crawl's delay.

use std::collections::BTreeMap;

use super::html::PageBuilder;
use super::model::{Host, Kind, Resource};
use super::robots::{Robots, RobotsGroup};

/// The scripted hosts: rendered in the tests, and not rendered.
pub const APP_HOSTS: [&str; 2] = ["app.web.test", "app-plain.web.test"];
/// The third-party host whose script the home pages load.
pub const CDN_HOST: &str = "cdn.web.test";
/// The third-party host a crawl blocks.
pub const ADS_HOST: &str = "ads.web.test";
/// The paragraph `/app.js` writes from the data it fetched.
pub const APP_TEXT: &str = "Catalogue built by the application script";
/// The line the third-party script writes.
pub const CDN_TEXT: &str = "Widget loaded from the content network";
/// The line the inline timer writes.
pub const TIMER_TEXT: &str = "Late note written by a timer";
/// The items `/app.js` links to: path and title.
pub const ITEMS: [(&str, &str); 2] = [
    ("/item1.html", "Heron field guide"),
    ("/item2.html", "Kingfisher field guide"),
];
/// An item page whose script never ends (`while (true) {}`): rendering gives up at
/// its time budget and parse reads the response.
pub const BUSY: (&str, &str) = ("/busy.html", "Busy page");
/// The paths only blocked scripts link to.
pub const NEVER_LINKED: [&str; 2] = ["/from-ad.html", "/from-tracker.html"];
/// The MIME type of the scripts.
pub const JS_TYPE: &str = "text/javascript; charset=utf-8";
/// The MIME type of the item data.
pub const JSON_TYPE: &str = "application/json";

/// The hosts of `--scripted`: the two application hosts, the content network and the
/// ad host.
pub fn scripted_hosts() -> Vec<Host> {
    let mut hosts: Vec<Host> = APP_HOSTS.iter().map(|h| app_host(h)).collect();
    hosts.push(third_party(
        CDN_HOST,
        "/lib.js",
        &format!("document.getElementById('cdn').textContent = '{CDN_TEXT}';\n"),
    ));
    hosts.push(third_party(
        ADS_HOST,
        "/ad.js",
        "var a = document.createElement('a'); a.href = '/from-ad.html'; \
         a.textContent = 'sponsored'; document.body.appendChild(a);\n",
    ));
    hosts
}

fn robots(disallow: &[&str]) -> Robots {
    Robots {
        groups: Some(vec![RobotsGroup {
            agents: vec!["*".into()],
            disallow: disallow.iter().map(|s| s.to_string()).collect(),
            allow: Vec::new(),
            crawl_delay: None,
        }]),
        unavailable: false,
        padding_bytes: 0,
        moved_to: None,
        sitemaps: Vec::new(),
    }
}

fn script(url: String, path: &str, body: &str, note: &str) -> Resource {
    let mut r = Resource::new(
        url,
        path.into(),
        Kind::Script,
        200,
        body.as_bytes().to_vec(),
    );
    r.content_type = JS_TYPE;
    r.note = Some(note.into());
    r
}

/// A host serving one script.
fn third_party(name: &str, path: &str, body: &str) -> Host {
    let mut resources = BTreeMap::new();
    let r = script(
        format!("http://{name}{path}"),
        path,
        body,
        "a third-party script of the scripted home pages",
    );
    resources.insert(path.to_string(), r);
    Host {
        name: name.into(),
        robots: robots(&[]),
        resources,
    }
}

/// One application host: the shell home page, its scripts and data, the item pages.
fn app_host(name: &str) -> Host {
    let url = |p: &str| format!("http://{name}{p}");
    let mut resources = BTreeMap::new();
    let mut add = |r: Resource| {
        resources.insert(r.path.clone(), r);
    };
    let home = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Field guides</title>\n\
         <script src=\"/app.js\"></script>\n\
         <script src=\"http://{CDN_HOST}/lib.js\" defer></script>\n\
         <script src=\"http://{ADS_HOST}/ad.js\" defer></script>\n\
         <script src=\"/private/track.js\" defer></script>\n\
         </head><body>\n<h1>Field guides</h1>\n<noscript>This catalogue needs JavaScript.</noscript>\n\
         <div id=\"app\"></div>\n<p id=\"cdn\"></p>\n<p id=\"late\"></p>\n\
         <script>setTimeout(function () {{ document.getElementById('late').textContent = '{TIMER_TEXT}'; }}, 150);</script>\n\
         </body></html>\n"
    );
    let mut r = Resource::new(url("/"), "/".into(), Kind::Home, 200, home.into_bytes());
    r.title = Some("Field guides".into());
    r.note = Some(
        "a shell page: its catalogue, links and two lines of text are written by scripts".into(),
    );
    add(r);
    let app = "document.addEventListener('DOMContentLoaded', function () {\n\
        var xhr = new XMLHttpRequest();\n\
        xhr.open('GET', '/api/items.json');\n\
        xhr.onload = function () {\n\
          var data = JSON.parse(xhr.responseText);\n\
          var app = document.getElementById('app');\n\
          var p = document.createElement('p'); p.textContent = data.intro; app.appendChild(p);\n\
          var ul = document.createElement('ul');\n\
          data.items.forEach(function (it) {\n\
            var li = document.createElement('li'); var a = document.createElement('a');\n\
            a.href = it.path; a.textContent = it.title; li.appendChild(a); ul.appendChild(li);\n\
          });\n\
          app.appendChild(ul);\n\
        };\n\
        xhr.send();\n\
      });\n";
    add(script(
        url("/app.js"),
        "/app.js",
        app,
        "the application: fetches /api/items.json and writes the catalogue",
    ));
    let items: Vec<String> = ITEMS
        .iter()
        .chain([&BUSY])
        .map(|(p, t)| format!("{{\"path\": \"{p}\", \"title\": \"{t}\"}}"))
        .collect();
    let json = format!(
        "{{\"intro\": \"{APP_TEXT}\", \"items\": [{}]}}\n",
        items.join(", ")
    );
    let mut r = Resource::new(
        url("/api/items.json"),
        "/api/items.json".into(),
        Kind::Script,
        200,
        json.into_bytes(),
    );
    r.content_type = JSON_TYPE;
    r.note = Some("the catalogue's data, fetched by /app.js".into());
    add(r);
    add(script(
        url("/private/track.js"),
        "/private/track.js",
        "var a = document.createElement('a'); a.href = '/from-tracker.html'; \
         a.textContent = 'tracked'; document.body.appendChild(a);\n",
        "a tracker under /private/, which robots.txt disallows: never requested",
    ));
    for (path, title) in ITEMS {
        add(item_page(&url(path), path, title));
    }
    let busy = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Busy page</title></head>\n\
        <body><h1>Busy page</h1><p>This page's script never ends.</p>\n\
        <script>while (true) {}</script></body></html>\n";
    let mut r = Resource::new(
        url(BUSY.0),
        BUSY.0.into(),
        Kind::Page,
        200,
        busy.as_bytes().to_vec(),
    );
    r.title = Some(BUSY.1.into());
    r.note = Some("a script that never ends: rendering stops at its time budget".into());
    add(r);
    for path in NEVER_LINKED {
        let mut b = PageBuilder::new("Never linked", None, None);
        b.heading("Only a blocked script links here");
        let (body, _) = b.finish();
        let mut r = Resource::new(url(path), path.into(), Kind::Page, 200, body);
        r.title = Some("Never linked".into());
        add(r);
    }
    Host {
        name: name.into(),
        robots: robots(&["/private/"]),
        resources,
    }
}

/// An item page: a shell whose title and text a script writes.
fn item_page(url: &str, path: &str, title: &str) -> Resource {
    let body = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Loading</title></head>\n\
         <body><article id=\"guide\"></article>\n<script>\n\
         document.title = '{title}';\n\
         var h = document.createElement('h1'); h.textContent = '{title}';\n\
         var p = document.createElement('p'); p.textContent = 'The {title} describes where the bird nests and what it eats.';\n\
         var g = document.getElementById('guide'); g.appendChild(h); g.appendChild(p);\n\
         </script></body></html>\n"
    );
    let mut r = Resource::new(url.into(), path.into(), Kind::Page, 200, body.into_bytes());
    r.title = Some(title.into());
    r.note = Some("its title and text are written by an inline script".into());
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_pages_link_nothing_before_scripts_run() {
        for h in scripted_hosts().iter().take(2) {
            let home = &h.resources["/"];
            let text = String::from_utf8_lossy(&home.body);
            assert!(!text.contains("<a "), "{text}");
            assert!(!text.contains(APP_TEXT));
            assert!(h.resources.contains_key("/private/track.js"));
            assert!(!h.robots.allowed("trawl", "/private/track.js"));
        }
    }
}
