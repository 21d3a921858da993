package stack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/go-delve/delve/pkg/dwarf/op"
)

// DWARF register numbers of x86-64 (System V psABI).
const (
	regRBX = 3
	regRBP = 6
	regRSP = 7
	regR12 = 12
	regR15 = 15
	regRA  = 16 // the return address column: RIP
	nRegs  = 17
)

// calleeSaved says which registers keep their value across a call when
// the CFI says nothing of them.
func calleeSaved(r uint64) bool {
	return r == regRBX || r == regRBP || (r >= regR12 && r <= regR15)
}

type regSet struct {
	v     [nRegs]uint64
	known uint32
}

func (rs *regSet) get(r uint64) (uint64, bool) {
	if r >= nRegs || rs.known&(1<<r) == 0 {
		return 0, false
	}
	return rs.v[r], true
}

func (rs *regSet) set(r uint64, v uint64) {
	rs.v[r] = v
	rs.known |= 1 << r
}

func regsOf(r Regs) regSet {
	var rs regSet
	rs.set(regRA, r.IP)
	rs.set(regRSP, r.SP)
	rs.set(regRBP, r.BP)
	rs.set(regRBX, r.BX)
	rs.set(12, r.R12)
	rs.set(13, r.R13)
	rs.set(14, r.R14)
	rs.set(15, r.R15)
	return rs
}

// window is the captured stack: memory from base upward.
type window struct {
	base uint64
	data []byte
}

var (
	errBeyond = errors.New("beyond the stack window")
	errBelow  = errors.New("below the stack window")
)

func (w *window) read(addr uint64) (uint64, error) {
	if addr < w.base {
		return 0, errBelow
	}
	off := addr - w.base
	if off > uint64(len(w.data)) || uint64(len(w.data))-off < 8 {
		return 0, errBeyond
	}
	return binary.LittleEndian.Uint64(w.data[off:]), nil
}

// readMemory serves delve's DWARF expression evaluator from the window.
func (w *window) readMemory(buf []byte, addr uint64) (int, error) {
	if addr < w.base {
		return 0, errBelow
	}
	off := addr - w.base
	if off > uint64(len(w.data)) || uint64(len(w.data))-off < uint64(len(buf)) {
		return 0, errBeyond
	}
	return copy(buf, w.data[off:]), nil
}

// stepError is why one step of unwinding failed.
type stepError struct {
	stop   StopReason
	detail string
}

// stepCFI computes the caller's registers from the callee's CFI row at
// the ELF address pc. cur are the callee's registers.
func stepCFI(m *module, fde *frame.FrameDescriptionEntry, pc uint64, cur *regSet, w *window, max int) (next regSet, serr *stepError) {
	ctx, err := m.row(fde, pc, max)
	if err != nil {
		return next, &stepError{StopBadCFI, err.Error()}
	}
	var cfa uint64
	switch ctx.CFA.Rule {
	case frame.RuleCFA:
		base, ok := cur.get(ctx.CFA.Reg)
		if !ok {
			return next, &stepError{StopBadCFI, fmt.Sprintf("CFA from register %d, whose value is unknown", ctx.CFA.Reg)}
		}
		cfa = base + uint64(ctx.CFA.Offset)
	case frame.RuleExpression:
		v, err := evalExpr(ctx.CFA.Expression, cur, 0, false, w)
		if err != nil {
			return next, exprStop(err, "CFA expression")
		}
		cfa = v
	default:
		return next, &stepError{StopBadCFI, fmt.Sprintf("CFA rule %d", ctx.CFA.Rule)}
	}

	raRule, ok := ctx.Regs[ctx.RetAddrReg]
	if !ok {
		return next, &stepError{StopBadCFI, "no rule for the return address"}
	}
	if raRule.Rule == frame.RuleUndefined {
		// The outermost frame (_start, a thread's start): the CFI says
		// there is no caller.
		return next, &stepError{StopEnd, ""}
	}
	for r := uint64(0); r < nRegs; r++ {
		if r == regRSP {
			continue
		}
		rule, ok := ctx.Regs[r]
		if !ok {
			if calleeSaved(r) {
				if v, ok := cur.get(r); ok {
					next.set(r, v)
				}
			}
			continue
		}
		v, known, err := applyRule(rule, r, cfa, cur, w)
		if err != nil {
			if r == ctx.RetAddrReg {
				return next, exprStop(err, "return address")
			}
			continue // a saved register out of reach: unknown in the caller
		}
		if known {
			next.set(r, v)
		}
	}
	ra, ok := next.get(ctx.RetAddrReg)
	if !ok {
		return next, &stepError{StopBadCFI, "return address rule gives no value"}
	}
	if ctx.RetAddrReg != regRA {
		next.set(regRA, ra)
	}
	next.set(regRSP, cfa)
	return next, nil
}

// applyRule gives a register's value in the caller.
func applyRule(rule frame.DWRule, r uint64, cfa uint64, cur *regSet, w *window) (uint64, bool, error) {
	switch rule.Rule {
	case frame.RuleUndefined:
		// delve's frame package turns DW_CFA_restore into "undefined"
		// (it keeps no CIE initial rules); on x86-64 the CIEs give no
		// rule for callee-saved registers, so restore means same value.
		if calleeSaved(r) {
			v, ok := cur.get(r)
			return v, ok, nil
		}
		return 0, false, nil
	case frame.RuleSameVal:
		v, ok := cur.get(r)
		return v, ok, nil
	case frame.RuleOffset:
		v, err := w.read(cfa + uint64(rule.Offset))
		return v, err == nil, err
	case frame.RuleValOffset:
		return cfa + uint64(rule.Offset), true, nil
	case frame.RuleRegister:
		v, ok := cur.get(rule.Reg)
		return v, ok, nil
	case frame.RuleExpression:
		addr, err := evalExpr(rule.Expression, cur, cfa, true, w)
		if err != nil {
			return 0, false, err
		}
		v, err := w.read(addr)
		return v, err == nil, err
	case frame.RuleValExpression:
		v, err := evalExpr(rule.Expression, cur, cfa, true, w)
		return v, err == nil, err
	}
	return 0, false, fmt.Errorf("register rule %d", rule.Rule)
}

func exprStop(err error, what string) *stepError {
	if errors.Is(err, errBeyond) {
		return &stepError{StopTruncated, what + " beyond the stack window"}
	}
	return &stepError{StopBadCFI, what + ": " + err.Error()}
}

// row gives the CFI row at pc, remembered per address (a row depends on
// the address alone).
func (m *module) row(fde *frame.FrameDescriptionEntry, pc uint64, max int) (*frame.FrameContext, error) {
	if ctx, ok := m.rows[pc]; ok {
		return ctx, nil
	}
	ctx, err := establish(fde, pc)
	if err != nil {
		return nil, err
	}
	if m.rows == nil || len(m.rows) >= max {
		m.rows = make(map[uint64]*frame.FrameContext)
	}
	m.rows[pc] = ctx
	return ctx, nil
}

// establish runs the CFI program to pc. delve's frame package panics on
// malformed instructions (and on a restore_state with nothing
// remembered): an error here.
func establish(fde *frame.FrameDescriptionEntry, pc uint64) (ctx *frame.FrameContext, err error) {
	defer func() {
		if r := recover(); r != nil {
			ctx, err = nil, fmt.Errorf("malformed CFI at %#x: %v", pc, r)
		}
	}()
	return fde.EstablishFrame(pc)
}

// evalExpr evaluates a DWARF expression with delve's op package over the
// known registers, reading memory from the window. For a register rule
// (pushCFA) the CFA is pushed first, as DWARF says: done by putting
// DW_OP_call_frame_cfa before the expression.
func evalExpr(expr []byte, cur *regSet, cfa uint64, pushCFA bool, w *window) (uint64, error) {
	regs := make([]*op.DwarfRegister, nRegs)
	for r := uint64(0); r < nRegs; r++ {
		if v, ok := cur.get(r); ok {
			regs[r] = op.DwarfRegisterFromUint64(v)
		}
	}
	dr := op.NewDwarfRegisters(0, regs, binary.LittleEndian, regRA, regRSP, regRBP, 0)
	dr.CFA = int64(cfa)
	if pushCFA {
		expr = append([]byte{byte(op.DW_OP_call_frame_cfa)}, expr...)
	}
	v, pieces, err := func() (v int64, p []op.Piece, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("DWARF expression: %v", r)
			}
		}()
		return op.ExecuteStackProgram(*dr, expr, 8, w.readMemory)
	}()
	if err != nil {
		return 0, err
	}
	if len(pieces) > 0 {
		return 0, errors.New("DWARF expression gives pieces, not an address")
	}
	return uint64(v), nil
}

// stepFP follows the frame-pointer chain: the caller's BP is at [BP],
// the return address at [BP+8], its SP is BP+16.
// pyTrampoline says whether the return address ra (less one: the call)
// lies in one of CPython's perf trampolines: pm, the process's perf map,
// names it "py::QUALNAME:FILE", as CPython 3.12 and later name each
// trampoline they make under -X perf (Python/perf_trampoline.c), and
// nothing else.
func pyTrampoline(pm *PerfMap, addr uint64) bool {
	name, ok := pm.Lookup(addr)
	return ok && strings.HasPrefix(name, "py::")
}

// stepPyTrampoline steps out of a CPython perf trampoline, from the return
// address of its call into the evaluation loop. x86-64's trampoline
// (Python/asm_trampoline.S) is "sub $8,%rsp; call *%rcx; add $8,%rsp;
// ret" in 3.12 and 3.13: at that return address its caller's return
// address is at SP+8 and its caller's SP is SP+16, and it touches no
// register the caller keeps. A trampoline that pushes BP instead of
// subtracting 8 ("push %rbp; mov %rsp,%rbp") has the same offsets, with
// BP equal to SP there and the caller's BP at SP.
func stepPyTrampoline(cur *regSet, w *window) (regSet, *stepError) {
	next := *cur
	sp, _ := cur.get(regRSP)
	ra, err := w.read(sp + 8)
	if err != nil {
		if errors.Is(err, errBeyond) {
			return next, &stepError{StopTruncated, "a Python perf trampoline's frame beyond the stack window"}
		}
		return next, &stepError{StopUnknownMapping, "a Python perf trampoline's frame not read"}
	}
	if bp, ok := cur.get(regRBP); ok && bp == sp {
		saved, _ := w.read(sp)
		next.set(regRBP, saved)
	}
	next.set(regRA, ra)
	next.set(regRSP, sp+16)
	return next, nil
}

func stepFP(cur *regSet, w *window) (next regSet, serr *stepError) {
	bp, ok := cur.get(regRBP)
	sp, _ := cur.get(regRSP)
	if ok && bp == 0 {
		// A chain ends with a zero BP (_start and Go's rt0 clear it).
		return next, &stepError{StopEnd, ""}
	}
	if !ok || bp < sp || bp&7 != 0 {
		return next, &stepError{StopNoUnwindInfo, "no CFI, and BP is no frame pointer"}
	}
	ra, err := w.read(bp + 8)
	if err != nil {
		// A BP past the window but within a stack's reach (8 MiB, the
		// usual limit) is a chain cut short; further, garbage.
		if errors.Is(err, errBeyond) && bp-w.base < 8<<20 {
			return next, &stepError{StopTruncated, "frame pointer beyond the stack window"}
		}
		return next, &stepError{StopNoUnwindInfo, "no CFI, and BP is no frame pointer"}
	}
	saved, _ := w.read(bp)
	next.set(regRBP, saved)
	next.set(regRA, ra)
	next.set(regRSP, bp+16)
	return next, nil
}
