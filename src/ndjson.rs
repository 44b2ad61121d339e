//! `--format ndjson`: fold one JSON value per line, streaming. (Issue 4.)
