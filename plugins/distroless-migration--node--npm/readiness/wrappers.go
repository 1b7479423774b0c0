package readiness

// Dependencies known to run a program.

// wrapperBinaries are npm packages that exist to run one program.
var wrapperBinaries = map[string][]string{
	"fluent-ffmpeg": {"ffmpeg", "ffprobe"}, "ffmpeg-static": nil, "ping": {"ping"}, "net-ping": nil,
	"simple-git": {"git"}, "gm": {"gm", "convert"}, "imagemagick": {"convert", "identify"},
	"youtube-dl-exec": {"yt-dlp", "python3"}, "yt-dlp-wrap": {"yt-dlp"}, "node-7z": {"7z"},
	"pdf-poppler": {"pdftoppm"}, "node-poppler": {"pdftotext", "pdftoppm"}, "ghostscript4js": {"gs"},
	"shelljs": {"sh"}, "node-cron-shell": {"sh"}, "git-clone": {"git"}, "isomorphic-git": nil,
	"puppeteer": {"chromium", "chromium-browser"}, "puppeteer-core": {"chromium", "chromium-browser"},
	"playwright": {"chromium"}, "playwright-core": {"chromium"}, "sharp-cli": nil, "wkhtmltopdf": {"wkhtmltopdf"},
}
