package workflowstate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// What a settled wait merges into the state: a signal wait (its signals,
// its decision map, its timed-out marker) and a wait for workflows (which
// workflows it waits for, and whether they satisfy its mode). The answers
// a person gives a signal wait (approve, reject, input) map to the signals
// it listens for here too.

// TimedOutKey is the state key a signal wait with a timeout sets: true when
// the timer won, false when the signal arrived first. name is the wait's
// result key, or its signal name when it has none.
func TimedOutKey(name string) string { return name + "_timed_out" }

// SignalOutput is what a settled wait merges into the state (Queuety's
// rules), plus the timed-out marker for waits that have a timeout.
func SignalOutput(step *workflowdef.Step, matched map[string]*phpjson.Object, timedOut bool) *phpjson.Object {
	out := phpjson.NewObject()
	if dm, ok := step.Raw.Get("decision_map"); ok && dm != nil {
		if m, ok := dm.(*phpjson.Object); ok && m.Len() > 0 && !timedOut {
			var sel string
			for _, n := range step.SignalNames {
				if _, ok := matched[n]; ok {
					sel = n
					break
				}
			}
			var outcome any = sel
			if v, ok := m.Get(sel); ok {
				outcome = v
			}
			data := matched[sel]
			if data == nil {
				data = phpjson.NewObject()
			}
			if step.ResultKey != "" {
				d := phpjson.NewObject()
				d.Set("outcome", outcome)
				d.Set("signal", sel)
				d.Set("data", data)
				out.Set(step.ResultKey, d)
			} else {
				out.Set("decision_outcome", outcome)
				out.Set("decision_signal", sel)
				for _, k := range data.Keys() {
					if !IsPrivateKey(k) {
						v, _ := data.Get(k)
						out.Set(k, v)
					}
				}
			}
			return out
		}
	}
	switch {
	case timedOut:
	case step.ResultKey != "" && len(step.SignalNames) == 1:
		p := matched[step.SignalNames[0]]
		if p == nil {
			p = phpjson.NewObject()
		}
		out.Set(step.ResultKey, p)
	case step.ResultKey != "":
		col := phpjson.NewObject()
		for _, n := range step.SignalNames {
			if p, ok := matched[n]; ok {
				col.Set(n, p)
			}
		}
		out.Set(step.ResultKey, col)
	default:
		for _, n := range step.SignalNames {
			p := matched[n]
			if p == nil {
				continue
			}
			for _, k := range p.Keys() {
				if !IsPrivateKey(k) {
					v, _ := p.Get(k)
					out.Set(k, v)
				}
			}
		}
	}
	if step.Timeout > 0 {
		name := step.ResultKey
		if name == "" && len(step.SignalNames) > 0 {
			name = step.SignalNames[0]
		}
		out.Set(TimedOutKey(name), timedOut)
	}
	return out
}

// ContainsSubset reports whether p Contains every key of subset with an
// equal value (recursively for objects).
func ContainsSubset(p, subset *phpjson.Object) bool {
	for _, k := range subset.Keys() {
		want, _ := subset.Get(k)
		got, ok := p.Get(k)
		if !ok {
			return false
		}
		wo, wIsObj := want.(*phpjson.Object)
		go_, gIsObj := got.(*phpjson.Object)
		if wIsObj && gIsObj {
			if !ContainsSubset(go_, wo) {
				return false
			}
			continue
		}
		if string(EncodeJSON(want)) != string(EncodeJSON(got)) {
			return false
		}
	}
	return true
}

// Contains reports whether list holds s.
func Contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// People's answers to waits (Client.Approve, Reject, SubmitInput).
const (
	AnswerApprove = "approve"
	AnswerReject  = "reject"
	AnswerInput   = "input"
)

// answerDefaults are the signals Queuety's approve_workflow,
// reject_workflow and submit_workflow_input send.
var answerDefaults = map[string]string{AnswerApprove: "approval", AnswerReject: "rejected", AnswerInput: "input"}

// AnswerSignal returns the signal an answer sends to a signal wait, or ""
// when the wait takes no such answer. A decision wait takes approve (its
// first signal) and reject (its second); an approval wait takes approve
// and an input wait input (their signal); any wait takes an answer whose
// Queuety default signal it listens for ("approval", "rejected", "input"),
// as Queuety's helpers only send those.
func AnswerSignal(step *workflowdef.Step, answer string) string {
	if step.Type != queuetytype.StepWaitForSignal || len(step.SignalNames) == 0 {
		return ""
	}
	switch human := workflowdef.String(step.Raw, "human_wait"); {
	case human == "decision" && len(step.SignalNames) == 2 && answer == AnswerApprove:
		return step.SignalNames[0]
	case human == "decision" && len(step.SignalNames) == 2 && answer == AnswerReject:
		return step.SignalNames[1]
	case human == "approval" && answer == AnswerApprove, human == "input" && answer == AnswerInput:
		return step.SignalNames[0]
	}
	if def := answerDefaults[answer]; Contains(step.SignalNames, def) {
		return def
	}
	return ""
}

// WaitAnswers lists the answers (approve, reject, input) a signal wait
// takes, in that order.
func WaitAnswers(step *workflowdef.Step) []string {
	var out []string
	for _, a := range []string{AnswerApprove, AnswerReject, AnswerInput} {
		if AnswerSignal(step, a) != "" {
			out = append(out, a)
		}
	}
	return out
}

// WaitSummary names a signal wait for an error message: its kind and its
// signals.
func WaitSummary(step *workflowdef.Step) string {
	quoted := make([]string, len(step.SignalNames))
	for i, n := range step.SignalNames {
		quoted[i] = strconv.Quote(n)
	}
	signals := "signal " + strings.Join(quoted, ", ")
	if len(quoted) > 1 {
		signals = "signals " + strings.Join(quoted, ", ")
	}
	if human := workflowdef.String(step.Raw, "human_wait"); human != "" {
		return fmt.Sprintf("%s (%s)", human, signals)
	}
	return signals
}

// AnswerHint says what a wait takes instead of answer.
func AnswerHint(step *workflowdef.Step, answer string) string {
	answers := WaitAnswers(step)
	switch {
	case answer == AnswerReject && workflowdef.String(step.Raw, "human_wait") == "approval":
		return ": only a decision wait can be rejected (it takes: " + strings.Join(answers, ", ") + ")"
	case len(answers) > 0:
		return " (it takes: " + strings.Join(answers, ", ") + ")"
	}
	return ": send its signal by name"
}

// WaitIDs resolves the workflow ids a wait step waits on: the listed ids,
// a started group, or a state key.
func WaitIDs(step *workflowdef.Step, state *phpjson.Object) []int64 {
	raw := step.Raw
	if v, ok := raw.Get("workflow_ids"); ok && v != nil {
		if list, isList := ListOf(v); isList {
			return normalizeIDs(list)
		}
	}
	if g := workflowdef.String(raw, "workflow_group_key"); g != "" {
		gv, _ := state.Get("_workflow_groups")
		if groups, ok := gv.(*phpjson.Object); ok {
			if ids, ok := groups.Get(g); ok {
				return IDsOf(ids)
			}
		}
		if ids, ok := state.Get(g); ok {
			return IDsOf(ids)
		}
		return nil
	}
	key := workflowdef.String(raw, "workflow_id_key")
	if key == "" {
		return nil
	}
	v, _ := state.Get(key)
	if v == nil {
		return nil
	}
	return IDsOf(v)
}

// IDsOf reads a list of workflow ids stored in the state.
func IDsOf(v any) []int64 {
	if list, ok := ListOf(v); ok {
		return normalizeIDs(list)
	}
	if id := ToInt(v); id > 0 {
		return []int64{id}
	}
	return nil
}

// normalizeIDs keeps the positive ids, first occurrence first.
func normalizeIDs(list []any) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, v := range list {
		id := ToInt(v)
		if id > 0 && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// EvaluateWait is Queuety's evaluate_wait_for_workflows_state: satisfied,
// pending or impossible.
func EvaluateWait(step *workflowdef.Step, ids []int64, rows map[int64]*driver.Workflow) string {
	mode := step.WaitMode
	if len(ids) == 0 {
		if mode == queuetytype.WaitAll {
			return "satisfied"
		}
		return "impossible"
	}
	quorum := max(step.Quorum, 1)
	completed, failed, active := 0, 0, 0
	for _, id := range ids {
		wf := rows[id]
		if wf == nil {
			return "impossible"
		}
		switch wf.Status {
		case driver.WorkflowCompleted:
			completed++
		case driver.WorkflowFailed, driver.WorkflowCancelled:
			failed++
		default:
			active++
		}
	}
	switch mode {
	case queuetytype.WaitAny:
		if completed >= 1 {
			return "satisfied"
		}
		if active == 0 {
			return "impossible"
		}
		return "pending"
	case queuetytype.WaitQuorum:
		if completed >= quorum {
			return "satisfied"
		}
		if completed+active < quorum {
			return "impossible"
		}
		return "pending"
	}
	if completed == len(ids) {
		return "satisfied"
	}
	if failed > 0 {
		return "impossible"
	}
	return "pending"
}

// WaitOutput is what a satisfied wait merges: the completed workflows'
// public states under the result key (keyed by id, or the one state when
// waiting on one workflow), or merged into the state in dependency order.
func WaitOutput(step *workflowdef.Step, ids []int64, rows map[int64]*driver.Workflow) *phpjson.Object {
	results := phpjson.NewObject()
	var order []int64
	for _, id := range ids {
		wf := rows[id]
		if wf == nil || wf.Status != driver.WorkflowCompleted {
			continue
		}
		st, err := DecodeObject("workflow state", wf.State)
		if err != nil {
			st = phpjson.NewObject()
		}
		results.Set(strconv.FormatInt(id, 10), PublicState(st))
		order = append(order, id)
		if step.WaitMode == queuetytype.WaitAny {
			break
		}
	}
	out := phpjson.NewObject()
	if step.ResultKey != "" {
		if len(ids) == 1 && len(order) == 1 {
			v, _ := results.Get(strconv.FormatInt(order[0], 10))
			out.Set(step.ResultKey, v)
			return out
		}
		out.Set(step.ResultKey, results)
		return out
	}
	for _, id := range order {
		v, _ := results.Get(strconv.FormatInt(id, 10))
		st := v.(*phpjson.Object)
		for _, k := range st.Keys() {
			x, _ := st.Get(k)
			out.Set(k, x)
		}
	}
	return out
}

// KnownAnswer reports whether answer is one of AnswerApprove, AnswerReject
// and AnswerInput.
func KnownAnswer(answer string) bool { return answerDefaults[answer] != "" }
