package runsc

import (
	"path"
	"regexp"
	"strings"
)

// mountTarget finds the target of a RUN --mount flag (target=, dst=,
// destination=) that is a relative path.
var mountTarget = regexp.MustCompile(`(--mount=\S*?(?:^|[,=])(?:target|dst|destination)=)([^,\s"'$/][^,\s"']*)`)

// absMountTargets makes the relative target of every RUN --mount flag
// absolute, against the WORKDIR in force, as buildkit resolves it:
// buildah 1.28 refuses a relative target ("invalid container path"), and
// `docker init`'s Node template writes target=package.json. A target
// whose WORKDIR is not known here (set by the base image, or through a
// variable) is left as it is. Line numbers do not change.
func absMountTargets(dockerfile []byte) []byte {
	lines := strings.Split(string(dockerfile), "\n")
	workdirs := map[string]string{} // stage name → its last WORKDIR
	var cur, stage string
	changed := false
	for i := 0; i < len(lines); i++ {
		// One instruction: its line and the lines it continues on.
		end := i
		for end < len(lines)-1 && strings.HasSuffix(strings.TrimRight(lines[end], " \t\r"), `\`) {
			end++
		}
		fields := strings.Fields(lines[i])
		if len(fields) > 0 {
			switch strings.ToUpper(fields[0]) {
			case "FROM":
				if stage != "" {
					workdirs[stage] = cur
				}
				cur, stage = "", ""
				var words []string
				for _, f := range fields[1:] {
					if !strings.HasPrefix(f, "--") {
						words = append(words, f)
					}
				}
				if len(words) > 0 {
					cur = workdirs[strings.ToLower(words[0])]
				}
				if len(words) >= 3 && strings.EqualFold(words[1], "AS") {
					stage = strings.ToLower(words[2])
				}
			case "WORKDIR":
				if len(fields) == 2 && !strings.ContainsAny(fields[1], `$"'`) {
					switch w := fields[1]; {
					case path.IsAbs(w):
						cur = path.Clean(w)
					case cur != "":
						cur = path.Join(cur, w)
					}
				} else {
					cur = ""
				}
			case "RUN":
				if cur == "" {
					break
				}
				for j := i; j <= end; j++ {
					if strings.Contains(lines[j], "--mount=") {
						nl := mountTarget.ReplaceAllStringFunc(lines[j], func(m string) string {
							sub := mountTarget.FindStringSubmatch(m)
							return sub[1] + path.Join(cur, sub[2])
						})
						if nl != lines[j] {
							lines[j], changed = nl, true
						}
					}
				}
			}
		}
		i = end
	}
	if !changed {
		return dockerfile
	}
	return []byte(strings.Join(lines, "\n"))
}
