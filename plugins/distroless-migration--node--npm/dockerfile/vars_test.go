package dockerfile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// instr returns stage s's n-th instruction of the given command.
func instr(t *testing.T, f *File, s int, command string, n int) Instruction {
	t.Helper()
	for _, in := range f.Stages[s].Instructions {
		if in.Command == command {
			if n == 0 {
				return in
			}
			n--
		}
	}
	t.Fatalf("stage %d has no %s #%d", s, command, n)
	return Instruction{}
}

func TestArgsExpandAsBuildkit(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `ARG APP_PATH=/srv/app
ARG NOT_REDECLARED=/nope
ARG NO_DEFAULT
FROM node:22 AS base
ARG APP_PATH
WORKDIR $APP_PATH
ENV OUT=${APP_PATH}/build
COPY src ${OUT}/src
COPY ${NOT_REDECLARED}/x ./x
COPY ${NO_DEFAULT}/y ./y
ARG NO_DEFAULT
COPY ${NO_DEFAULT:-conf}/z ${NO_DEFAULT:+never}/z
COPY ${NO_DEFAULT}/w ./w

FROM base AS child
COPY ${OUT}/a ./a

FROM node:22-slim
ARG LOCAL=/opt/rt
ARG RUN_AS=node
WORKDIR ${LOCAL}
USER "node"
USER ${RUN_AS}:"node"
COPY --from=base $APP_PATH/build ./build
COPY --from=base ${MISSING:-/srv/app}/dist ./dist
COPY --from=base ${TARGETARCH}/bin ./bin
`)
	type got struct {
		Args    []string
		Unknown []string
	}
	look := func(s int, cmd string, n int) got {
		in := instr(t, f, s, cmd, n)
		g := got{Args: in.Args}
		for _, u := range in.Unknown {
			g.Unknown = append(g.Unknown, u.Name)
		}
		return g
	}
	for _, c := range []struct {
		name  string
		stage int
		cmd   string
		n     int
		want  got
	}{
		{"a global ARG declared again in the stage", 0, "workdir", 0, got{Args: []string{"/srv/app"}}},
		{"ENV expands ARG, and COPY expands ENV", 0, "copy", 0, got{Args: []string{"src", "/srv/app/build/src"}}},
		{"a global ARG not declared again is not visible", 0, "copy", 1, got{Args: []string{"${NOT_REDECLARED}/x", "./x"}, Unknown: []string{"NOT_REDECLARED"}}},
		{"not declared in the stage yet", 0, "copy", 2, got{Args: []string{"${NO_DEFAULT}/y", "./y"}, Unknown: []string{"NO_DEFAULT"}}},
		{"the default forms of an ARG with no default", 0, "copy", 3, got{Args: []string{"conf/z", "/z"}}},
		{"an ARG with no default stays unknown", 0, "copy", 4, got{Args: []string{"${NO_DEFAULT}/w", "./w"}, Unknown: []string{"NO_DEFAULT"}}},
		{"a stage built FROM another inherits its ENV", 1, "copy", 0, got{Args: []string{"/srv/app/build/a", "./a"}}},
		{"a stage ARG", 2, "workdir", 0, got{Args: []string{"/opt/rt"}}},
		{"USER's quotes go, as buildkit reads them", 2, "user", 0, got{Args: []string{"node"}}},
		{"USER expands ARG", 2, "user", 1, got{Args: []string{"node:node"}}},
		{"COPY --from paths expand in the copying stage's scope", 2, "copy", 0, got{Args: []string{"$APP_PATH/build", "./build"}, Unknown: []string{"APP_PATH"}}},
		{"a default form of an undeclared variable", 2, "copy", 1, got{Args: []string{"/srv/app/dist", "./dist"}}},
		{"a platform ARG", 2, "copy", 2, got{Args: []string{"${TARGETARCH}/bin", "./bin"}, Unknown: []string{"TARGETARCH"}}},
	} {
		if diff := cmp.Diff(c.want, look(c.stage, c.cmd, c.n)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	if got := f.Workdir(0); got != "/srv/app" {
		t.Errorf("Workdir(base) = %q, want /srv/app", got)
	}
	if got := f.Workdir(2); got != "/opt/rt" {
		t.Errorf("Workdir(final) = %q, want /opt/rt", got)
	}
	in := instr(t, f, 0, "copy", 4)
	if len(in.Unknown) != 1 || in.Unknown[0].Why != whyNoDefault {
		t.Errorf("unknown %+v, want NO_DEFAULT with why %q", in.Unknown, whyNoDefault)
	}
	if in.Source == "" || in.Args[0] == "" {
		t.Error("the instruction lost its source")
	}
}

func TestArgExpansionKeepsEscapesAndQuotes(t *testing.T) {
	t.Parallel()
	f := mustParse(t, "FROM node:22\nARG D=dist\nCOPY \\$D/x '$D'/y ./\nENV A=1 B=$A\nARG A=2\nENV C=$A\n")
	in := instr(t, f, 0, "copy", 0)
	if diff := cmp.Diff([]string{"$D/x", "$D/y", "./"}, in.Args); diff != "" {
		t.Errorf("escaped and quoted words (-want +got):\n%s", diff)
	}
	// One ENV's values expand in the environment before it; the later of
	// ARG and ENV wins.
	if diff := cmp.Diff([]string{"A=1", "B=$A"}, instr(t, f, 0, "env", 0).Args); diff != "" {
		t.Errorf("ENV A=1 B=$A (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"C=2"}, instr(t, f, 0, "env", 1).Args); diff != "" {
		t.Errorf("ENV after ARG (-want +got):\n%s", diff)
	}
}
