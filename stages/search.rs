//! `search`: queries the crawl's search index.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use trawl::index::serve::{DEFAULT_ADDR, ServeOpts};
use trawl::index::{Ranking, SearchRequest, Searcher};

#[derive(Debug, Parser)]
#[command(
    name = "search",
    version,
    about = "Search the crawl's index: ranked results with snippets",
    long_about = "Prints the best pages for QUERY: words (all must match; when no page has them \
all, pages with some), \"a phrase\", AND/OR/NOT, -word, site:host, lang:xx, type:pdf, \
title:word; anything else (a pasted error message, a path, code) is searched as its words, \
and a query may start with a dash (`search -foo bar`). \
Ranked by BM25 over title, anchors, main text and text, plus PageRank, inlinks and URL depth \
(docs/search.md). Build the index first with `index`. With --serve it serves a search page \
and a JSON API instead (docs/search.md, Search web page)."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// The query (not with --serve).
    #[arg(
        value_name = "QUERY",
        required_unless_present = "serve",
        allow_hyphen_values = true
    )]
    query: Option<String>,
    /// Serve the search page (`/`) and the JSON API (`/api/search?q=`) on ADDR
    /// (default 127.0.0.1:8984; port 0 picks a free one) until SIGINT or SIGTERM,
    /// instead of running one query. Prints `search: serving http://ADDR/` once ready.
    #[arg(
        long,
        value_name = "ADDR",
        num_args = 0..=1,
        default_missing_value = DEFAULT_ADDR,
        conflicts_with = "query"
    )]
    serve: Option<SocketAddr>,
    /// With --serve: allow an address other than loopback (0.0.0.0, a LAN address),
    /// making the page reachable from other machines.
    #[arg(long, requires = "serve")]
    public: bool,
    /// Results to print.
    #[arg(long, default_value_t = 10, value_name = "K")]
    top: usize,
    /// Results to skip (the page of results: --offset 10 is page 2).
    #[arg(long, default_value_t = 0, value_name = "N")]
    offset: usize,
    /// Print the results as one JSON object.
    #[arg(long)]
    json: bool,
    /// Also count the matching pages by site, language and media type (in the JSON
    /// object's `facets`, or lines after the results).
    #[arg(long, conflicts_with = "serve")]
    facets: bool,
    /// The ranking: `full` (every field and the priors) or `bm25` (BM25 alone over the page's text).
    #[arg(long, value_enum, default_value = "full")]
    ranking: RankingArg,
    /// The index directory (default: the crawl directory's index/).
    #[arg(long, value_name = "DIR")]
    index_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum RankingArg {
    /// Every field and the priors (the default).
    Full,
    /// BM25 over title and text alone.
    Bm25,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    let dir = trawl::index::locate(&args.common, args.index_dir.as_deref())?;
    let searcher = Searcher::open(&dir)?;
    let ranking = match args.ranking {
        RankingArg::Full => Ranking::full(),
        RankingArg::Bm25 => Ranking::bm25(),
    };
    if let Some(addr) = args.serve {
        trawl::signal::install()?;
        let opts = ServeOpts {
            addr,
            public: args.public,
            ranking,
        };
        let report = trawl::index::serve::serve(searcher, &opts, |bound| {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "search: serving http://{bound}/");
            let _ = out.flush();
        })?;
        // A signal is how a server is stopped: a normal end (exit 0), not the
        // interruption of unfinished work (exit 4) that cli::finish reports.
        return Err(
            trawl::cli::Exit::new(trawl::cli::exit::OK, format!("search: {report}")).into(),
        );
    }
    let req = SearchRequest {
        query: args.query.clone().unwrap_or_default(),
        top: args.top.clamp(1, 10_000),
        offset: args.offset,
        ranking,
        facets: args.facets,
    };
    let results = searcher.search(&req)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if args.json {
        serde_json::to_writer(&mut out, &results)?;
        writeln!(out)?;
    } else {
        trawl::index::search::write_text(&mut out, &req, &results)?;
    }
    out.flush()?;
    Ok(())
}
