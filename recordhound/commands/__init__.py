"""recordhound's Scrapy commands (COMMANDS_MODULE): an extended `scrapy shell`."""
