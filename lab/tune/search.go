package tune

import (
	"errors"
	"math/rand/v2"

	"gonum.org/v1/gonum/optimize"
)

// search drives gonum's CMA-ES a generation at a time: ask for the
// generation's candidates, tell their scores. optimize.Minimize would call
// a function per candidate; a generation here is a whole step of
// sessions, run together (and on a cluster, in other processes), so the
// method is driven through its own protocol (optimize.Method: Init, then
// Run exchanging tasks on two channels), as Minimize drives it.
type search struct {
	method  *optimize.CmaEsChol
	ops     chan optimize.Task
	results chan optimize.Task
	pop     int
	asked   []optimize.Task
	done    bool
}

// errConverged: the method stopped (its distribution collapsed to a
// point); the search has nothing more to propose.
var errConverged = errors.New("tune: the search converged")

// newSearch starts CMA-ES at x0 with the given population and initial
// step, its samples drawn from a source seeded by seed: the same seed and
// scores give the same candidates.
func newSearch(x0 []float64, pop int, step float64, seed uint64) *search {
	m := &optimize.CmaEsChol{
		InitStepSize: step,
		Population:   pop,
		Src:          rand.NewPCG(seed, 0x6c61622074756e65), // "lab tune"
	}
	n := m.Init(len(x0), pop)
	tasks := make([]optimize.Task, n)
	for i := range tasks {
		tasks[i].Location = &optimize.Location{X: make([]float64, len(x0))}
	}
	copy(tasks[0].X, x0)
	s := &search{method: m, ops: make(chan optimize.Task, n), results: make(chan optimize.Task, n), pop: n}
	go m.Run(s.ops, s.results, tasks)
	return s
}

// ask returns the next generation's candidates, as the method's
// coordinates (copies: the method reuses its tasks' memory).
func (s *search) ask() ([][]float64, error) {
	if s.done {
		return nil, errConverged
	}
	s.asked = s.asked[:0]
	var xs [][]float64
	for len(s.asked) < s.pop {
		t := <-s.ops
		if t.Op != optimize.FuncEvaluation {
			return nil, errors.New("tune: the optimiser sent " + t.Op.String() + " where a candidate was due")
		}
		s.asked = append(s.asked, t)
		xs = append(xs, append([]float64(nil), t.X...))
	}
	return xs, nil
}

// tell hands the scores of the last generation asked, in its order, and
// lets the method update its distribution. After it, ask proposes the
// next generation, or errConverged.
func (s *search) tell(scores []float64) error {
	if len(scores) != len(s.asked) {
		return errors.New("tune: scores for a generation that was not asked")
	}
	for i, t := range s.asked {
		t.F = scores[i]
		s.results <- t
	}
	s.asked = s.asked[:0]
	t := <-s.ops
	switch t.Op {
	case optimize.MajorIteration:
		s.results <- optimize.Task{Op: optimize.MajorIteration}
	case optimize.MethodDone:
		s.done = true
		s.stop()
	default:
		return errors.New("tune: the optimiser sent " + t.Op.String() + " after a generation")
	}
	return nil
}

// close ends the method's goroutine.
func (s *search) close() {
	if !s.done {
		s.done = true
		s.stop()
	}
}

// stop tells the method to finish and waits for it to close its channel.
func (s *search) stop() {
	s.results <- optimize.Task{Op: optimize.PostIteration}
	close(s.results)
	for range s.ops {
	}
}
