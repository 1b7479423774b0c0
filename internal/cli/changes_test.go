package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/recipe"
)

// The text output names a change once with every line it serves: a files
// stage that takes two RUN steps was listed twice, word for word
// (excalidraw-room). JSON keeps one change per blocker.
func TestGroupChanges(t *testing.T) {
	t.Parallel()
	got := groupChanges([]recipe.Change{
		{Rule: "move_to_builder", Line: 6, What: "the runtime stage's RUN steps stay in a files stage"},
		{Rule: "bump_node", Line: 1, What: "Node moves to 22"},
		{Rule: "move_to_builder", Line: 10, What: "the runtime stage's RUN steps stay in a files stage"},
		{Rule: "move_to_builder", Line: 10, What: "the runtime stage's RUN steps stay in a files stage"},
		{Rule: "distroless_base", What: "the runtime stage is FROM gcr.io/distroless/nodejs22-debian13"},
		{Rule: "move_to_builder", Line: 6, What: "dev dependencies are pruned"},
	})
	want := []changeGroup{
		{rule: "move_to_builder", what: "the runtime stage's RUN steps stay in a files stage", lines: []string{"6", "10"}},
		{rule: "bump_node", what: "Node moves to 22", lines: []string{"1"}},
		{rule: "distroless_base", what: "the runtime stage is FROM gcr.io/distroless/nodejs22-debian13"},
		{rule: "move_to_builder", what: "dev dependencies are pruned", lines: []string{"6"}},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(changeGroup{})); d != "" {
		t.Errorf("groups (-want +got):\n%s", d)
	}
}
