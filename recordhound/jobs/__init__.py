"""Jobs: parse a source (crawl a shop, import a file) in the background, with progress, stop and
resume; the worker that runs them; URLs pushed into a running crawl from outside."""
