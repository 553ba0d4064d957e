package setup

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// journal records what steps and clean-ups did, in order.
type journal []string

// step makes a step that notes its name, registers a clean-up noting
// "undo NAME" (failing with cleanupErr when it is not nil), and then
// fails with err when it is not nil.
func (j *journal) step(name string, err, cleanupErr error) Step {
	return Step{Name: name, Do: func(_ context.Context, u *Undo) error {
		*j = append(*j, name)
		u.Add("undo "+name, func() error {
			*j = append(*j, "undo "+name)
			return cleanupErr
		})
		return err
	}}
}

func TestRunThenUndoInReverse(t *testing.T) {
	var j journal
	u, err := Run(context.Background(), []Step{j.step("a", nil, nil), j.step("b", nil, nil), j.step("c", nil, nil)})
	require.NoError(t, err)
	require.Equal(t, journal{"a", "b", "c"}, j, "the steps in order, nothing undone yet")
	require.NoError(t, u.Run())
	require.Equal(t, journal{"a", "b", "c", "undo c", "undo b", "undo a"}, j)
	require.NoError(t, u.Run())
	require.Len(t, j, 6, "each clean-up runs once")
}

// A step that fails stops the set-up: the steps after it never run, and
// what it and the steps before it made is undone, last made first.
func TestAFailingStepUndoesWhatWasDone(t *testing.T) {
	var j journal
	boom := errors.New("shell: no such scenario")
	u, err := Run(context.Background(), []Step{j.step("a", nil, nil), j.step("b", boom, nil), j.step("c", nil, nil)})
	require.Nil(t, u)
	require.ErrorIs(t, err, boom)
	require.EqualError(t, err, "shell: no such scenario", "the step's own message, which the user reads")
	var se *Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, "b", se.Step)
	require.NoError(t, se.Cleanup)
	require.Equal(t, journal{"a", "b", "undo b", "undo a"}, j, "c never ran; b's clean-up, registered before it failed, ran")
}

// A failing step that made nothing registers nothing: only the steps
// before it are undone.
func TestAStepThatMadeNothingHasNothingToUndo(t *testing.T) {
	var j journal
	boom := errors.New("boom")
	_, err := Run(context.Background(), []Step{j.step("a", nil, nil), {Name: "b", Do: func(context.Context, *Undo) error { return boom }}})
	require.ErrorIs(t, err, boom)
	require.Equal(t, journal{"a", "undo a"}, j)
}

// A clean-up that fails does not stop the others, and its error is
// reported beside the cause, naming it.
func TestCleanupErrorsAreReported(t *testing.T) {
	var j journal
	boom, stuck, busy := errors.New("boom"), errors.New("device busy"), errors.New("file busy")
	_, err := Run(context.Background(), []Step{j.step("a", nil, busy), j.step("b", nil, stuck), j.step("c", boom, nil)})
	require.Equal(t, journal{"a", "b", "c", "undo c", "undo b", "undo a"}, j)
	require.EqualError(t, err, "boom; undoing the set-up: undo b: device busy; undo a: file busy")
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, err, stuck)
	require.ErrorIs(t, err, busy)
	var se *Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, "c", se.Step)
	require.EqualError(t, se.Cleanup, "undo b: device busy; undo a: file busy")

	// The same when a set-up that succeeded is undone.
	j = nil
	u, err := Run(context.Background(), []Step{j.step("a", nil, busy), j.step("b", nil, nil)})
	require.NoError(t, err)
	err = u.Run()
	require.EqualError(t, err, "undo a: file busy")
	require.ErrorIs(t, err, busy)
	require.Equal(t, journal{"a", "b", "undo b", "undo a"}, j)
}

// A context ended before a step begins stops the set-up there and undoes
// it; its cause comes back.
func TestContextEndedBetweenSteps(t *testing.T) {
	var j journal
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("the user gave up")
	cancelling := Step{Name: "b", Do: func(ctx context.Context, u *Undo) error {
		j = append(j, "b")
		cancel(stop)
		return nil
	}}
	_, err := Run(ctx, []Step{j.step("a", nil, nil), cancelling, j.step("c", nil, nil)})
	require.Equal(t, journal{"a", "b", "undo a"}, j, "c never began")
	require.ErrorIs(t, err, stop)
	require.EqualError(t, err, "set-up ended before c: the user gave up")
	var se *Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, "c", se.Step)

	// Ended before the first step: nothing is done at all.
	j = nil
	_, err = Run(ctx, []Step{j.step("a", nil, nil)})
	require.ErrorIs(t, err, stop)
	require.Empty(t, j)
}

// A step that panics is undone before the panic goes on.
func TestAPanickingStepIsUndone(t *testing.T) {
	var j journal
	panicking := Step{Name: "b", Do: func(_ context.Context, u *Undo) error {
		u.Add("undo b", func() error { j = append(j, "undo b"); return nil })
		panic("bug")
	}}
	require.PanicsWithValue(t, "bug", func() { _, _ = Run(context.Background(), []Step{j.step("a", nil, nil), panicking}) })
	require.Equal(t, journal{"a", "undo b", "undo a"}, j)
}
