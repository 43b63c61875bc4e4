# The screenshots of the referee's console and the projector page
# (docs/screenshots/): a round of twelve virtual tables in headless Chromium
# (Debian's, make browser-setup; playwright drives it, never 'playwright install').
.PHONY: screenshots

screenshots: setup browser-setup
	nice $(PY) docs/screenshots/make_screenshots.py docs/screenshots
