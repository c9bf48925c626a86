//! The library on a small corpus: relevance, resources, sections, refused
//! paths, the `ask` prompt, and live updates reaching a change-bus listener.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{TempDir, corpus};
use ferromcp_docs::{DocsError, Library, Options};
use ferromcp_server::notify::{Change, ChangeBus, LocalBus};
use ferromcp_server::protocol::types::{ContentBlock, ResourceContents};
use std::sync::Arc;
use std::time::Duration;

fn open(dir: &TempDir) -> Library {
    Library::open(dir.path(), Options::default()).unwrap().0
}

#[test]
fn the_right_file_ranks_first() {
    let d = corpus("rank");
    let lib = open(&d);
    let cases = [
        (
            "how do I install quill on macOS",
            "docs://install.md#installation",
        ),
        (
            "where is the configuration file",
            "docs://config.md#the-configuration-file",
        ),
        (
            "two devices edited the same note, what happens",
            "docs://sync.md#conflicts",
        ),
        (
            "keyboard shortcut for a hyperlink",
            "docs://shortcuts.md#editing",
        ),
        ("export a note as PDF", "docs://export.md#pdf"),
        (
            "I forgot my passphrase",
            "docs://security/encryption.md#passphrase",
        ),
        (
            "write a plugin in Lua",
            "docs://plugins.md#writing-a-plugin",
        ),
        ("quill crashes at startup", "docs://troubleshooting.txt"),
    ];
    for (q, want) in cases {
        let page = lib.search(q, 0, 3);
        // The right file first, and the wanted section among its top hits.
        let file = want.split('#').next().unwrap_or(want);
        let got = page.results.first().map(|h| h.file_uri.as_str());
        assert_eq!(got, Some(file), "query {q:?}: {:#?}", page.results);
        assert!(
            page.results.iter().take(2).any(|h| h.uri == want),
            "query {q:?}: {:#?}",
            page.results
        );
    }
}

#[test]
fn hits_have_snippets_and_pages() {
    let d = corpus("pages");
    let lib = open(&d);
    let p = lib.search("quill", 0, 2);
    assert!(p.total > 2, "{p:?}");
    assert_eq!(p.results.len(), 2);
    assert_eq!(p.next_offset, Some(2));
    let p2 = lib.search("quill", 2, 2);
    assert_eq!(p2.offset, 2);
    assert!(p2.results.iter().all(|h| !p.results.contains(h)));
    let h = &lib.search("passphrase recovered", 0, 1).results[0];
    assert!(h.snippet.contains("**passphrase**"), "{}", h.snippet);
    assert!(h.snippet.contains("**recovered**"), "{}", h.snippet);
    assert_eq!(h.file_uri, "docs://security/encryption.md");
    // The source's own emphasis is dropped: bold marks matches only.
    d.write(
        "bold.md",
        "# Bold\n\nSome **very important zanzibar** notes.\n",
    );
    let lib2 = open(&d);
    let h2 = &lib2.search("zanzibar", 0, 1).results[0];
    assert_eq!(h2.snippet, "Some very important **zanzibar** notes.");
    assert_eq!(h.title, "Encryption");
    assert_eq!(h.section, "Passphrase");
    // The page size is capped.
    let big = lib.search("quill", 0, 10_000);
    assert!(big.results.len() <= Options::DEFAULT_MAX_PAGE_SIZE);
}

#[test]
fn files_and_sections() {
    let d = corpus("files");
    d.write("image.md", "");
    std::fs::write(d.path().join("logo.png"), [0x89, b'P', b'N', b'G', 0, 0, 1]).unwrap();
    let lib = open(&d);
    let install = lib.file("install.md").unwrap();
    assert_eq!(install.title, "Installing quill");
    assert_eq!(
        install.description.as_deref(),
        Some("How to install quill on Linux, macOS and Windows.")
    );
    assert_eq!(install.mime, "text/markdown");
    assert_eq!(install.size, FILES_INSTALL_LEN());
    let txt = lib.file("troubleshooting.txt").unwrap();
    assert_eq!(
        (txt.title.as_str(), txt.mime),
        ("Troubleshooting", "text/plain")
    );
    let sec = lib.read_uri("docs://install.md#installation").unwrap();
    assert!(sec.text.starts_with("## Installation"), "{}", sec.text);
    assert!(!sec.text.contains("Upgrading"));
    let whole = lib.read_uri("docs://install.md").unwrap();
    assert!(whole.text.contains("Upgrading"));
    assert!(matches!(
        lib.read_uri("docs://install.md#nope"),
        Err(DocsError::NotFound(_))
    ));
    // Non-ASCII headings: the slug is percent-encoded in URIs.
    d.write("intl.md", "# Überblick\n\nGrüße aus Köln.\n");
    let lib2 = open(&d);
    let hit = &lib2.search("Köln", 0, 1).results[0];
    assert_eq!(hit.uri, "docs://intl.md#%C3%BCberblick");
    assert!(lib2.read_uri(&hit.uri).unwrap().text.contains("Köln"));
    assert!(lib2.section_text(&hit.uri).is_some());
    assert!(matches!(
        lib2.read_uri("docs://intl.md#%ZZ"),
        Err(DocsError::Refused(_))
    ));
    let (paths, total) = lib.complete_paths("sec", 100);
    assert_eq!(
        (paths, total),
        (vec!["security/encryption.md".to_owned()], 1)
    );
    let (_, all) = lib.complete_paths("", 3);
    assert_eq!(all, 9);
}

#[allow(non_snake_case)]
fn FILES_INSTALL_LEN() -> u64 {
    common::FILES[0].1.len() as u64
}

#[test]
fn escapes_are_refused() {
    let d = corpus("escape");
    let outside = TempDir::new("outside");
    outside.write("secret.md", "# Secret\n\nnot for you\n");
    std::fs::write(d.path().join("blob.md"), b"# bin\n\0\x01\x02").unwrap();
    std::fs::write(d.path().join("logo.png"), [0x89, b'P', b'N', b'G', 0, 0]).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.path().join("secret.md"), d.path().join("link.md"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("linkdir")).unwrap();
    }
    let (lib, skipped) = Library::open(d.path(), Options::default()).unwrap();
    assert!(lib.file("blob.md").is_none());
    assert!(
        skipped
            .files
            .iter()
            .any(|(f, why)| f == "blob.md" && why.contains("binary"))
    );
    let secret = outside.path().join("secret.md");
    let abs = format!("docs://{}", secret.display());
    for uri in [
        "docs://../outside/secret.md",
        "docs://a/../../secret.md",
        "docs://%2E%2E/secret.md",
        "docs://./install.md",
        abs.as_str(),
        "docs://blob.md",
        "docs://logo.png",
    ] {
        match lib.read_uri(uri) {
            Err(DocsError::Refused(m)) => assert!(!m.is_empty()),
            other => panic!("{uri}: {other:?}"),
        }
    }
    assert!(format!("{:?}", lib.read_uri("docs://blob.md")).contains("binary"));
    #[cfg(unix)]
    {
        let e = lib.read_uri("docs://link.md").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        // One answer whether or not the file exists outside the folder.
        let e = lib.read_uri("docs://linkdir/secret.md").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let e2 = lib.read_uri("docs://linkdir/secret2.md").unwrap_err();
        assert_eq!(
            e.to_string().replace("secret2", "secret"),
            e2.to_string().replace("secret2", "secret")
        );
        assert!(lib.search("secret", 0, 10).results.is_empty());
    }
    let small = Options {
        max_file_size: 100,
        ..Options::default()
    };
    let (lib, _) = Library::open(d.path(), small).unwrap();
    let e = lib.read_uri("docs://install.md").unwrap_err();
    assert!(e.to_string().contains("byte limit"), "{e}");
}

#[test]
fn the_ask_prompt_has_persona_rules_sections_question() {
    let d = corpus("ask");
    let persona = "You are Quill's friendly helper.";
    let lib = Library::open(
        d.path(),
        Options {
            persona: Some(persona.into()),
            prompt_sections: 3,
            ..Options::default()
        },
    )
    .unwrap()
    .0;
    let m = ferromcp_docs::ask_messages(&lib, "How do I install quill on macOS?");
    // Up to 3 sections, only those relevant enough (issue 28).
    let relevant = lib
        .search("How do I install quill on macOS?", 0, 3)
        .results
        .iter()
        .filter(|h| h.relevance >= Options::DEFAULT_MIN_RELEVANCE)
        .count();
    assert!((1..=3).contains(&relevant), "{relevant}");
    assert_eq!(m.len(), 2 + relevant, "{m:#?}");
    let ContentBlock::Text(first) = &m[0].content else {
        panic!("{m:#?}")
    };
    assert!(first.text.starts_with(persona));
    assert!(first.text.contains(ferromcp_docs::RULES));
    let ContentBlock::Resource(r) = &m[1].content else {
        panic!("{m:#?}")
    };
    let ResourceContents::Text(t) = &r.resource else {
        panic!()
    };
    assert!(t.uri.starts_with("docs://install.md"), "{}", t.uri);
    let embedded: Vec<String> = m[1..1 + relevant]
        .iter()
        .filter_map(|x| match &x.content {
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::Text(t) => Some(format!("{} {}", t.uri, t.text)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(embedded.len(), relevant);
    assert!(
        embedded
            .iter()
            .any(|e| e.starts_with("docs://install.md#installation ")
                && e.contains("brew install quill")),
        "{embedded:#?}"
    );
    let ContentBlock::Text(last) = &m[1 + relevant].content else {
        panic!()
    };
    assert_eq!(last.text, "Question: How do I install quill on macOS?");
    // Nothing relevant: the rules still say to admit it.
    let none = ferromcp_docs::ask_messages(&lib, "zebra xylophone");
    assert_eq!(none.len(), 2);
    let ContentBlock::Text(t) = &none[0].content else {
        panic!()
    };
    assert!(t.text.contains("does not cover"));
    assert!(t.text.starts_with(persona));
    let default = open(&d);
    let ContentBlock::Text(t) = &ferromcp_docs::ask_messages(&default, "install")[0].content else {
        panic!()
    };
    assert!(t.text.starts_with(ferromcp_docs::DEFAULT_PERSONA));
    assert!(!t.text.contains("cut short"), "{}", t.text);
}

/// Waits up to 5 s for `cond`.
async fn eventually(cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "not within 5 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn next_change(rx: &mut tokio::sync::broadcast::Receiver<Change>) -> Change {
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("a change within 5 s")
        .expect("bus open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_updates_reach_the_bus() {
    let d = corpus("live");
    let lib = Arc::new(open(&d));
    let bus = Arc::new(LocalBus::new(64));
    let builder = ferromcp_server::Server::builder("t", "1")
        .backplane(ferromcp_server::Backplane::default().change_bus(bus.clone()));
    let server = ferromcp_docs::register(builder, &lib, true)
        .build()
        .unwrap();
    let w = ferromcp_docs::watch(lib.clone(), server.clone()).unwrap();
    let mut rx = bus.subscribe();
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Change a file: one list change, then updates for its URIs.
    let t = std::time::Instant::now();
    d.write(
        "sync.md",
        "# Synchronisation\n\n## Conflicts\n\nquill now merges zeppelin edits itself.\n",
    );
    assert_eq!(next_change(&mut rx).await, Change::ResourcesListChanged);
    // Typically ~150 ms (the debounce); the bound is loose for loaded CI
    // machines, the CLI test prints the figure.
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    let mut updated = Vec::new();
    while let Ok(Ok(Change::ResourceUpdated(u))) =
        tokio::time::timeout(Duration::from_millis(300), rx.recv()).await
    {
        updated.push(u);
    }
    assert!(
        updated.contains(&"docs://sync.md".to_owned()),
        "{updated:?}"
    );
    assert!(
        updated.contains(&"docs://sync.md#conflicts".to_owned()),
        "{updated:?}"
    );
    // A write may land as two events (truncation, then data): the index
    // catches up with the second.
    eventually(|| {
        lib.search("zeppelin", 0, 1)
            .results
            .first()
            .is_some_and(|h| h.uri == "docs://sync.md#conflicts")
    })
    .await;

    // Add one, remove one.
    d.write("new/faq.md", "# FAQ\n\nAnswers about walruses.\n");
    std::fs::remove_file(d.path().join("plugins.md")).unwrap();
    assert_eq!(next_change(&mut rx).await, Change::ResourcesListChanged);
    // The two events may land in one batch or two.
    eventually(|| lib.file("new/faq.md").is_some() && lib.file("plugins.md").is_none()).await;
    assert!(
        lib.search("lua plugin", 0, 5)
            .results
            .iter()
            .all(|h| !h.uri.contains("plugins"))
    );
    assert_eq!(
        lib.search("walruses", 0, 1).results[0].uri,
        "docs://new/faq.md#faq"
    );
    assert!(lib.read_uri("docs://plugins.md").is_err());

    // Quiet again: the rescans' own reads of files and folders must not
    // trigger further rescans.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let settled = w.refreshes();
    assert!(settled >= 2, "{settled}");
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(w.refreshes(), settled, "the watcher keeps rescanning");
}

#[test]
fn snippets_come_from_a_bounded_window_of_a_huge_section() {
    // The densest run of matches lies far past the window: the snippet is
    // built from the window (the section's start), never by scanning all
    // of it.
    let d = TempDir::new("snippet-window");
    let filler = "lorem ipsum dolor ".repeat(8 * 1024);
    d.write(
        "huge.md",
        &format!(
            "# Huge\n\nA gizmo starts here.\n\n{filler}\n\nfarmarker gizmo gizmo gizmo gizmo\n"
        ),
    );
    let lib = open(&d);
    let page = lib.search("gizmo", 0, 10);
    assert_eq!(page.results.len(), 1, "{page:#?}");
    let s = &page.results[0].snippet;
    assert!(s.contains("**gizmo**"), "{s}");
    assert!(!s.contains("farmarker"), "{s}");
    assert!(s.ends_with('…'), "{s}");
}

#[test]
fn the_ask_prompt_cuts_long_sections_and_links_the_rest() {
    let d = TempDir::new("ask-caps");
    let body = "gizmo lever ".repeat(2000);
    for i in 0..3 {
        d.write(&format!("g{i}.md"), &format!("# Gizmo {i}\n\n{body}\n"));
    }
    d.write("short.md", "# Short gizmo\n\nA gizmo lever, briefly.\n");
    let (lib, _) = Library::open(
        d.path(),
        Options {
            prompt_section_bytes: 1000,
            max_prompt_bytes: 2500,
            ..Options::default()
        },
    )
    .unwrap();
    let m = ferromcp_docs::ask_messages(&lib, "gizmo lever");
    let ContentBlock::Text(intro) = &m[0].content else {
        panic!("{m:#?}")
    };
    assert!(intro.text.contains("cut short"), "{}", intro.text);
    let mut embedded = Vec::new();
    let mut links = Vec::new();
    for x in &m {
        match &x.content {
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::Text(t) => embedded.push((t.uri.clone(), t.text.len())),
                other => panic!("{other:?}"),
            },
            ContentBlock::ResourceLink(l) => links.push(l.uri.clone()),
            _ => {}
        }
    }
    assert!(embedded.iter().all(|(_, n)| *n <= 1000), "{embedded:?}");
    let total: usize = embedded.iter().map(|(_, n)| n).sum();
    assert!(total <= 2500, "{total}");
    // Each long section is linked; the budget ran out before the last.
    let long: Vec<&String> = links.iter().filter(|u| u.starts_with("docs://g")).collect();
    assert_eq!(long.len(), 3, "{links:?}");
    // Whatever the budget left out is still there as a link.
    for f in ["g0", "g1", "g2", "short"] {
        let uri = format!("docs://{f}.md");
        assert!(
            embedded.iter().any(|(u, _)| u.starts_with(&uri))
                || links.iter().any(|u| u.starts_with(&uri)),
            "{f}: {embedded:?} {links:?}"
        );
    }
}

// Issue 28: the `ask` prompt embeds only sections relevant enough; for a
// question the documents do not answer it says so and names the closest
// sections instead of handing the model weak matches.
#[test]
fn the_ask_prompt_abstains_when_the_docs_do_not_cover_the_question() {
    let d = TempDir::new("ask-abstain");
    d.write(
        "guide.md",
        "# Guide\n\n## Gizmo levers\n\nPull the gizmo lever to start.\n\n## Widgets\n\nWidgets spin.\n",
    );
    let (lib, _) = Library::open(d.path(), Options::default()).unwrap();
    let embedded = |m: &[ferromcp_server::protocol::types::PromptMessage]| {
        m.iter()
            .filter(|x| matches!(x.content, ContentBlock::Resource(_)))
            .count()
    };
    // Answerable: the section is embedded.
    let m = ferromcp_docs::ask_messages(&lib, "how do I pull the gizmo lever");
    assert_eq!(embedded(&m), 1, "{m:#?}");
    // Not answerable, though one word matches: nothing embedded, the
    // closest section named, and the model told plainly.
    let m = ferromcp_docs::ask_messages(&lib, "kubernetes ingress for a gizmo cluster");
    assert_eq!(embedded(&m), 0, "{m:#?}");
    let ContentBlock::Text(intro) = &m[0].content else {
        panic!("{m:#?}")
    };
    assert!(intro.text.contains("does not cover"), "{}", intro.text);
    assert!(
        intro.text.contains("docs://guide.md#gizmo-levers"),
        "{}",
        intro.text
    );
    // search_docs reports the same signal.
    let page = lib.search("kubernetes ingress for a gizmo cluster", 0, 10);
    assert!(!page.covered);
    assert!(page.results[0].relevance < page.min_relevance);
    let page = lib.search("pull the gizmo lever", 0, 10);
    assert!(page.covered);
    assert!(page.results[0].relevance >= page.min_relevance);
}

// Issue 28: a section is indexed with its parent headings, so a query
// naming the parent and the child finds the child.
#[test]
fn sections_are_found_by_their_heading_path() {
    let d = TempDir::new("heading-path");
    d.write(
        "sec.md",
        "# Security\n\n## Confused Deputy Problem\n\nA proxy acts for the wrong party.\n\n### Mitigation\n\nAsk the user for consent every time.\n\n## Token Passthrough\n\nDo not.\n\n### Mitigation\n\nValidate tokens.\n",
    );
    let (lib, _) = Library::open(d.path(), Options::default()).unwrap();
    let page = lib.search("confused deputy mitigation", 0, 3);
    assert_eq!(page.results[0].uri, "docs://sec.md#mitigation", "{page:#?}");
}

// Issue 28: a protocol method name matches whole: the section naming
// `notifications/initialized` ranks above sections that say
// "notifications" and "initialized" often, apart.
#[test]
fn method_names_match_as_a_whole() {
    let d = TempDir::new("method-names");
    d.write(
        "a.md",
        "# Notifications\n\nNotifications, notifications: every notification is initialized lazily; notifications are initialized on demand.\n",
    );
    d.write(
        "b.md",
        "# Handshake\n\nAfter the initialize response the client sends `notifications/initialized` once, then normal requests follow in any order over the same transport, as described in the sections on lifecycle and shutdown.\n",
    );
    let (lib, _) = Library::open(d.path(), Options::default()).unwrap();
    let page = lib.search("notifications/initialized", 0, 3);
    assert_eq!(page.results[0].uri, "docs://b.md#handshake", "{page:#?}");
}

// Issue 28: a section that is mostly links is not buried by its URLs'
// length.
#[test]
fn a_list_of_links_is_not_buried_by_its_urls() {
    let d = TempDir::new("links");
    let links: String = (0..12)
        .map(|i| format!("- [{i}](https://cdn.example.net/r/v{i}/x86_64/unknown/linux/gnu/tar/gz/pkg/index.html)\n"))
        .collect();
    d.write("links.md", &format!("# Download mirrors\n\n{links}"));
    d.write("other.md", "# Releases\n\nEach download has mirrors.\n");
    let (lib, _) = Library::open(d.path(), Options::default()).unwrap();
    let page = lib.search("download mirrors", 0, 3);
    assert_eq!(
        page.results[0].uri, "docs://links.md#download-mirrors",
        "{page:#?}"
    );
}

// Issue 28: a query word finds its related term (abort → cancel).
#[test]
fn related_terms_widen_a_query() {
    let d = TempDir::new("related");
    d.write(
        "cancel.md",
        "# Stopping work\n\nTo cancel a request in flight, send a cancellation notification with its id.\n",
    );
    d.write(
        "request.md",
        "# Request format\n\nEvery request is JSON. A request has an id.\n",
    );
    let (lib, _) = Library::open(d.path(), Options::default()).unwrap();
    let page = lib.search("abort a request", 0, 3);
    assert_eq!(
        page.results[0].uri, "docs://cancel.md#stopping-work",
        "{page:#?}"
    );
}

// Issue 28 (the abstain decision): a section sharing the rare words of a
// question with a document about something else (another product's TLS
// set-up for "mutual TLS for the gateway's upstreams") is not an answer;
// the same section inside a document that covers the rest of the
// question is. The document's own coverage of the query is part of the
// relevance signal.
#[test]
fn a_section_of_a_document_about_something_else_does_not_cover() {
    let d = TempDir::new("doc-coverage");
    d.write(
        "queue.md",
        "# Queue client\n\n## Encryption\n\nThe queue client speaks tls with mutual certificates.\n\n## Retries\n\nFailed jobs are retried three times.\n",
    );
    d.write(
        "gateway.md",
        "# Gateway\n\n## Upstreams\n\nThe gateway forwards calls to its upstreams.\n\n### Encryption\n\nConnections use tls with mutual certificates.\n",
    );
    for (i, topic) in [
        "logging", "metrics", "storage", "sessions", "prompts", "caching",
    ]
    .iter()
    .enumerate()
    {
        d.write(
            &format!("other{i}.md"),
            &format!("# {topic}\n\n## Overview\n\nHow {topic} works in general.\n"),
        );
    }
    let (lib, _) = Library::open(d.path(), Options::default()).unwrap();
    // Nothing here is about a billing proxy: the closest section holds
    // the rare words, and neither it nor its document holds the rest.
    let page = lib.search("mutual tls certificates for the billing proxy", 0, 3);
    assert_eq!(
        page.results[0].uri, "docs://gateway.md#encryption",
        "{page:#?}"
    );
    assert!(!page.covered, "{page:#?}");
    assert!(page.results[0].relevance < page.min_relevance, "{page:#?}");
    // The queue's document holds the rest of this question (its
    // retries, in a sibling section): covered.
    let page = lib.search("mutual tls certificates of the queue, retries", 0, 3);
    assert_eq!(
        page.results[0].uri, "docs://queue.md#encryption",
        "{page:#?}"
    );
    assert!(page.covered, "{page:#?}");
    let page = lib.search("mutual tls certificates for the gateway upstreams", 0, 3);
    assert_eq!(
        page.results[0].uri, "docs://gateway.md#encryption",
        "{page:#?}"
    );
    assert!(page.covered, "{page:#?}");
}
