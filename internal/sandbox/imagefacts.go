package sandbox

// Bounds on the lists of ImageFacts: a backend lists at most this many
// paths of each kind, and counts the rest.
const (
	MaxFactSetuid = 64
	MaxFactShells = 32
)

// Package databases an ImageFacts counts from (ImageFacts.PackageDBs).
const (
	// PackageDBDpkg is /var/lib/dpkg/status (its "install ok installed"
	// entries) and the one-package files of /var/lib/dpkg/status.d/
	// (distroless images have only those).
	PackageDBDpkg = "dpkg"
	// PackageDBApk is /lib/apk/db/installed.
	PackageDBApk = "apk"
)

// ImageFacts describe a built image: what it weighs and what of an
// operating system it carries. A backend reads them from the committed
// image, host-side and read-only; nothing of the image runs for them.
type ImageFacts struct {
	// Bytes is the sum of the image's uncompressed layer sizes, the size
	// Docker reports; Layers counts the layers. Both are 0 when the
	// layers could not be read (Incomplete says why).
	Bytes  int64 `json:"bytes"`
	Layers int   `json:"layers"`
	// Packages counts the OS packages that PackageDBs record as
	// installed; PackageDBs is empty when the image has no package
	// database (Packages is then 0: nothing says what came from where).
	Packages   int      `json:"packages"`
	PackageDBs []string `json:"package_dbs,omitempty"`
	// Setuid are the paths of the executable regular files with the
	// setuid or setgid bit, sorted, at most MaxFactSetuid; SetuidCount
	// counts them all.
	Setuid      []string `json:"setuid,omitempty"`
	SetuidCount int      `json:"setuid_count"`
	// Shells are the shells present (sh, bash, dash, ash, zsh, ksh, csh,
	// busybox and the like, in a bin or sbin directory), sorted by path,
	// at most MaxFactShells; ShellCount counts them all.
	Shells     []Shell `json:"shells,omitempty"`
	ShellCount int     `json:"shell_count"`
	// Incomplete says what could not be read, or where a bound stopped
	// the reading; empty when the facts are whole.
	Incomplete string `json:"incomplete,omitempty"`
}

// Shell is a shell an image holds.
type Shell struct {
	// Path is where it is, absolute in the image.
	Path string `json:"path"`
	// Target is the symlink's target as written, when Path is a symlink
	// (to busybox, say); empty for a file.
	Target string `json:"target,omitempty"`
}
