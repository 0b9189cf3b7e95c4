package runbooks

import (
	"reflect"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/step"
)

// Expressions are type-checked against Go struct types built at load time
// from the runbook itself: one field per param, per step (with the check's
// declared outputs) and per finding. A typo such as `steps.chat.byts` is then
// a compile error that lint reports with its position, not a false finding
// at 3 a.m.

// envTypes holds the expression environment types of one runbook.
type envTypes struct {
	root      reflect.Type
	params    reflect.Type
	paramIdx  map[string]int
	steps     reflect.Type
	stepIdx   map[string]int
	stepTypes map[string]*stepType
	findings  reflect.Type
	findIdx   map[string]int
}

// stepType is the expression type of one step.
type stepType struct {
	single  reflect.Type // the per-target struct
	typ     reflect.Type // single, or the per-role struct for several targets
	multi   bool
	roleIdx map[string]int
	outputs reflect.Type
	// outField maps an output struct field index to its field in single.
	outField map[int]int
}

// Common fields every step exposes, before its check's outputs.
const (
	fStatus = iota
	fRan
	fError
	fDuration
	fTarget
	fHost
	numCommon
)

// The common names avoid "status" and "error", which checks use for what
// they observed (an HTTP status, a probe's error text).
var commonFields = []reflect.StructField{
	field(fStatus, "state", reflect.TypeFor[string]()),
	field(fRan, "ran", reflect.TypeFor[bool]()),
	field(fError, "failure", reflect.TypeFor[string]()),
	field(fDuration, "duration", reflect.TypeFor[time.Duration]()),
	field(fTarget, "target", reflect.TypeFor[string]()),
	field(fHost, "host", reflect.TypeFor[string]()),
}

// commonNames are reserved: check outputs and roles cannot use them.
var commonNames = []string{"state", "ran", "failure", "duration", "target", "host", "targets"}

func field(i int, name string, t reflect.Type) reflect.StructField {
	return reflect.StructField{
		Name: "F" + itoa(i),
		Type: t,
		Tag:  reflect.StructTag(`expr:"` + name + `" json:"` + name + `"`),
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// exprName returns the name an output field is known by in expressions.
func exprName(f reflect.StructField) string {
	if n, _, _ := strings.Cut(f.Tag.Get("expr"), ","); n != "" {
		return n
	}
	return ""
}

func newStepType(outputs reflect.Type, roles []string) *stepType {
	st := &stepType{outputs: outputs, outField: map[int]int{}}
	fields := append([]reflect.StructField(nil), commonFields...)
	if outputs != nil {
		for i := range outputs.NumField() {
			f := outputs.Field(i)
			name := exprName(f)
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			st.outField[i] = len(fields)
			fields = append(fields, field(len(fields), name, f.Type))
		}
	}
	st.single = reflect.StructOf(fields)
	st.typ = st.single
	if len(roles) > 1 {
		st.multi = true
		st.roleIdx = map[string]int{}
		mf := []reflect.StructField{
			field(0, "ran", reflect.TypeFor[bool]()),
			field(1, "targets", reflect.SliceOf(st.single)),
		}
		for _, r := range roles {
			st.roleIdx[r] = len(mf)
			mf = append(mf, field(len(mf), r, st.single))
		}
		st.typ = reflect.StructOf(mf)
	}
	return st
}

// value builds the expression value of one step from its per-target runs,
// in the order of the step's targets.
func (st *stepType) value(runs []*TargetRun, roles []string) reflect.Value {
	singles := make([]reflect.Value, len(runs))
	allRan := len(runs) > 0
	for i, r := range runs {
		singles[i] = st.singleValue(r)
		if !r.Status.Ran() {
			allRan = false
		}
	}
	if !st.multi {
		if len(singles) == 0 {
			return reflect.New(st.single).Elem()
		}
		return singles[0]
	}
	v := reflect.New(st.typ).Elem()
	v.Field(0).SetBool(allRan)
	list := reflect.MakeSlice(reflect.SliceOf(st.single), 0, len(singles))
	for i, s := range singles {
		list = reflect.Append(list, s)
		if idx, ok := st.roleIdx[roles[i]]; ok {
			v.Field(idx).Set(s)
		}
	}
	v.Field(1).Set(list)
	return v
}

func (st *stepType) singleValue(r *TargetRun) reflect.Value {
	v := reflect.New(st.single).Elem()
	if r == nil {
		return v
	}
	v.Field(fStatus).SetString(string(r.Status))
	v.Field(fRan).SetBool(r.Status.Ran())
	v.Field(fError).SetString(r.Error)
	v.Field(fDuration).SetInt(int64(r.Duration))
	v.Field(fTarget).SetString(r.Target)
	v.Field(fHost).SetString(r.Host)
	if r.Status != step.OK || r.Values == nil || st.outputs == nil {
		return v
	}
	out := reflect.ValueOf(r.Values)
	if out.Kind() == reflect.Pointer {
		if out.IsNil() {
			return v
		}
		out = out.Elem()
	}
	if out.Type() != st.outputs {
		return v
	}
	for i, j := range st.outField {
		v.Field(j).Set(out.Field(i))
	}
	return v
}

// structOf builds a struct type with one field per name, all of type t.
func structOf(names []string, types []reflect.Type) (reflect.Type, map[string]int) {
	idx := map[string]int{}
	fields := make([]reflect.StructField, len(names))
	for i, n := range names {
		idx[n] = i
		fields[i] = field(i, n, types[i])
	}
	return reflect.StructOf(fields), idx
}

// OutputName returns the name a check's output field is known by in
// expressions (its expr tag), or "" for a field expressions do not see.
func OutputName(f reflect.StructField) string { return exprName(f) }
