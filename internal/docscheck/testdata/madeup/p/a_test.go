package p

import (
	"fmt"
	"testing"
)

func TestA(t *testing.T)      {}
func Test(t *testing.T)       {}
func Test_under(t *testing.T) {}
func Test1(t *testing.T)      {}
func TestÄrger(t *testing.T)  {}
func Testé(n int)             {}
func Testify()                {}
func BenchmarkB(b *testing.B) {}
func Benchmarkish(n int)      {}
func FuzzF(f *testing.F)      {}
func Fuzzy()                  {}

type S struct{}

func (S) TestMethod(t *testing.T) {}

func ExampleWithOutput() {
	fmt.Println("x")
	// Output: x
}

func ExampleNoOutput() { fmt.Println("x") }

func ExampleEmpty() {
	// Output:
}

func Example_unordered() {
	fmt.Println("b")
	fmt.Println("a")
	// Unordered output:
	// a
	// b
}

func Exampleish() {
	// Output:
}
