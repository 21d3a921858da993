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
	if len(*sites) >= maxSites || !e.keep(im, siteBytes) {
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

// attemptSites are the call sites of a chain's attempts, the winner's
// added.
func (e *Engine) attemptSites(im *image, sites []trace.CallSite, winner trace.StackID, won bool) []trace.CallSite {
	if won {
		e.addSite(im, &sites, winner, 1)
	}
	return sites
}
