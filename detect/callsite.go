package detect

import "github.com/oncetool/once/trace"

// With --stacks every call arrives with the StackID of its caller's
// stack, and each file, failed spelling and probe chain counts its calls
// per distinct stack: its call sites. The counts are exact; what is
// capped is how many distinct stacks one list tells apart.

const (
	// maxSites bounds the distinct call sites one list keeps; calls from
	// further stacks are counted under trace.StackNotKept.
	maxSites = 64
	// siteBytes is a CallSite in its slice.
	siteBytes = 16
)

// addSite counts n calls from stack id in sites, when stacks are on.
func (e *Engine) addSite(im *image, sites *[]trace.CallSite, id trace.StackID, n int) {
	if !e.stacks || n <= 0 {
		return
	}
	for i := range *sites {
		if (*sites)[i].Stack == id {
			(*sites)[i].Count += n
			return
		}
	}
	if len(*sites) >= maxSites || !e.keepDetail(im, siteBytes) {
		id = trace.StackNotKept
		for i := range *sites {
			if (*sites)[i].Stack == id {
				(*sites)[i].Count += n
				return
			}
		}
		e.charge(im, siteBytes) // one slot, whatever the budget: the count stays exact
	}
	*sites = append(*sites, trace.CallSite{Stack: id, Count: n})
}

// addFirstSite counts a file's first call, which reaches user space after
// its repeats (kept in the kernel until one came), from stack id: its
// site goes first, where the order of first calls puts it and where the
// report looks for the call to keep.
func (e *Engine) addFirstSite(im *image, sites *[]trace.CallSite, id trace.StackID) {
	e.addSite(im, sites, id, 1)
	s := *sites
	for i := range s {
		if s[i].Stack == id || i == len(s)-1 && s[i].Stack == trace.StackNotKept {
			site := s[i]
			copy(s[1:i+1], s[:i])
			s[0] = site
			return
		}
	}
}

// attemptSites are the call sites of a chain's attempts, the winner's
// added.
func (e *Engine) attemptSites(im *image, sites []trace.CallSite, winner trace.StackID, won bool) []trace.CallSite {
	if won {
		e.addSite(im, &sites, winner, 1)
	}
	return sites
}
