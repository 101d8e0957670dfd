"""The glossary of the app: every term a policy committee meets, in plain words
(pure; no Streamlit). Facts from SPEC §1-§3 and, for the other methods, the papers the
"Compare methods" pages follow. Pages link to an entry with `link_params`; the glossary
page shows the linked entry first."""

from __future__ import annotations

from typing import NamedTuple


class Term(NamedTuple):
    term: str
    topic: str
    meaning: str


PRIVACY = "Privacy accounting"
STRUCTURE = "What is counted"
MECHANISM = "How the noise is added"
ACCURACY = "Accuracy"
RELEASE = "What is published"
METHODS = "Other methods (Compare methods)"

TOPICS = (PRIVACY, STRUCTURE, MECHANISM, ACCURACY, RELEASE, METHODS)

TERMS: tuple[Term, ...] = (
    # ------------------------------------------------------------------ privacy
    Term("Privacy budget", PRIVACY,
         "How much a release may reveal about any one person. **A smaller budget is more private**: it forces "
         "more noise, so the published counts are less accurate. Each population group level has its own "
         "budget, and the levels add up."),
    Term("Differential privacy (DP)", PRIVACY,
         "A guarantee about the method, not the data: whatever one person's answers were, the published "
         "tables would look almost the same, so they reveal almost nothing about that person. How close "
         "\"almost\" is, is the budget."),
    Term("ε (epsilon)", PRIVACY,
         "The classic measure of privacy loss: with or without one person, the chance of any published result "
         "differs by at most a factor e^ε. **Smaller is more private**: ε = 1 allows a factor 2.7, ε = 10 a "
         "factor of 22,000. Under pure DP the level budgets are ε; under zCDP ε is computed from ρ at a chosen δ."),
    Term("ρ (rho), zCDP", PRIVACY,
         "Zero-concentrated differential privacy, the definition the 2020 Census used: the budget of a level is "
         "ρ. **Smaller ρ is more private.** ρ adds up over the levels of a run; it converts to (ε, δ)-DP for any "
         "δ: ε = ρ + 2√(ρ ln(1/δ)) (classic), or the smaller tight figure (Canonne, Kamath and Steinke 2020). "
         "zCDP goes with discrete Gaussian noise."),
    Term("δ (delta)", PRIVACY,
         "The small probability that the ε guarantee of a zCDP release does not hold. The app converts ρ to ε "
         "at δ = 1e-10 unless you choose another δ on the Overview. A smaller δ gives a larger ε for the same ρ. "
         "Pure DP has δ = 0."),
    Term("Pure DP", PRIVACY,
         "Differential privacy with δ = 0 (config privacy_defn = \"puredp\"): the level budgets are ε and the "
         "noise is two-sided geometric. Switching the planner to pure DP converts each budget so that every "
         "level keeps its MOE target."),
    Term("Per-level ε", PRIVACY,
         "The ε that one population group level's budget gives on its own (at the app's δ under zCDP). Shown "
         "next to every budget. The release as a whole costs the sum over a run's levels, not the largest one."),
    Term("Sequential composition", PRIVACY,
         "Budgets spent on the same persons add up: the US run costs the sum of the ρ (or ε) of its levels. "
         "The Puerto Rico run covers other persons, so the release costs the larger of the two runs, max(US, PR)."),
    Term("Bounded and unbounded neighbours", PRIVACY,
         "Two ways to say what \"one person\" means. Unbounded (the default here, as in production): data sets "
         "that differ by adding or removing one person. Bounded: data sets of the same size that differ in one "
         "person's record, which is like removing one person and adding another, so the cost doubles (×2)."),
    # ------------------------------------------------------------------ structure
    Term("Population group", STRUCTURE,
         "A pair of a geographic area and a race or ethnicity group, e.g. \"Cook County, Illinois × Albanian "
         "alone\". Every population group of the public universe gets a count, even if nobody is in it, so the "
         "output never reveals which groups are empty."),
    Term("Population group level", STRUCTURE,
         "A geography level crossed with an iteration level, e.g. (COUNTY, Detailed). There are 20; each has "
         "its own budget, MOE target and thresholds. A level with budget 0 is not tabulated."),
    Term("Geography levels", STRUCTURE,
         "USA, STATE, COUNTY, TRACT, PLACE and AIANNH (American Indian, Alaska Native and Native Hawaiian "
         "areas); Puerto Rico runs separately with PR-STATE, PR-COUNTY, PR-TRACT and PR-PLACE. USA, STATE and "
         "PR-STATE are the state-or-above levels."),
    Term("Regional and Detailed", STRUCTURE,
         "The two iteration levels that are tabulated. Regional (level 1): broad groups such as \"European "
         "alone\" (52 race and ethnicity groups at USA/STATE in 2020). Detailed (level 2): specific groups such "
         "as \"Albanian alone\" (2,944 at USA/STATE, 2,150 below). Level 0 (major races) is never tabulated."),
    Term("Characteristic iteration", STRUCTURE,
         "A race or ethnicity group a count is made for, defined in the spec files. \"Alone\": every race code "
         "of the person is in the group. \"Alone or in any combination\": at least one is."),
    Term("TotalOnly (DETAILED_ONLY)", STRUCTURE,
         "Iterations that exist only at USA, STATE and PR-STATE and get a single total with the level's whole "
         "budget, with no adaptive choice and no sex × age table. COARSE_ONLY iterations are the reverse: "
         "tabulated only below the state level."),
    Term("Race multiplicity r", STRUCTURE,
         "The most race codes one person can have (config max_race_codes, 1 to 8; 2020: 8). A person with more "
         "codes is counted with the first r."),
    Term("Stability S", STRUCTURE,
         "The most population groups one person can join within one level: S = max(2, r) + 1 with the 2020 "
         "spec files (S = 9 at r = 8). The noise grows with S, so a smaller r means less noise for the same "
         "budget."),
    # ------------------------------------------------------------------ mechanism
    Term("Stage 1", MECHANISM,
         "Each group first gets a noisy total that spends a share γ of the level's budget. It is never "
         "published; it only decides how much detail the group gets."),
    Term("γ (gamma)", MECHANISM,
         "The stage-1 fraction of each level's budget (config privacy_budget_p_stage_1_fraction; 2020: 0.1). "
         "Stage 2 gets the rest, 1 − γ."),
    Term("Thresholds Θ₁ ≤ Θ₂ ≤ Θ₃ and stat level", MECHANISM,
         "The stage-1 noisy total is compared with three thresholds: below Θ₁ the group gets a total only "
         "(stat level 0), then sex × age4 (level 1), sex × age9 (level 2), and from Θ₃ sex × age23 (level 3). "
         "Thresholds cost no budget; they decide how the budget is spread."),
    Term("Stage 2", MECHANISM,
         "Fresh noisy counts for the table the group got, spending 1 − γ of the budget. Every cell gets the same "
         "noise, so a table with more cells has a noisier total but more detail."),
    Term("Discrete Gaussian noise (σ²)", MECHANISM,
         "The noise of zCDP: whole numbers drawn from a bell curve on the integers with variance parameter "
         "σ² = S / (2 × share × ρ). Drawn exactly, from a secure random source."),
    Term("Two-sided geometric noise (b)", MECHANISM,
         "The noise of pure DP: whole numbers with P(k) proportional to exp(−|k| / b), scale b = S / (share × ε)."),
    Term("Secure and seeded noise", MECHANISM,
         "Secure: from a cryptographically secure random source, for release. Seeded: reproducible, for "
         "demonstrations and tests only, and marked NOT FOR RELEASE everywhere."),
    # ------------------------------------------------------------------ accuracy
    Term("MOE (95% margin of error)", ACCURACY,
         "The error a published count stays within 95% of the time, in persons. The planner's MOE is that of "
         "one published count (a stage-2 cell)."),
    Term("Exact MOE and the ⌊1.96σ⌋ bound", ACCURACY,
         "Exact: the smallest m with P(|noise| ≤ m) ≥ 95% for the actual (discrete) noise. ⌊1.96σ⌋: the design "
         "paper's continuous-Gaussian figure, with which the 2020 budgets were set; the exact MOE can be one "
         "larger. The planner's verdict says which one it compares with the target."),
    Term("MOE target", ACCURACY,
         "The MOE a level should have; the planner derives the budget from it. 2020: 3 (USA and STATE Detailed), "
         "11 (sub-state Detailed), 50 (Regional)."),
    Term("Relative MOE", ACCURACY,
         "MOE divided by the expected count (a coefficient of variation in spirit): an MOE of 11 is 110% of a "
         "count of 10 but 1.1% of a count of 1,000."),
    Term("Group-size profile", ACCURACY,
         "For each population group level, how many groups of the public universe have each true size (0, 1, 2, "
         "... persons), every size exact, plus the data's person counts: all a plan's national outcome depends "
         "on. `python -m engine profile PARAMS_DIR DATA_DIR OUT.json.gz` makes one by the same counting as a "
         "run. The app ships two synthetic ones (a nation of 330 million invented persons, and the 50,000-person "
         "sample). A profile of real data holds exact, noise-free counts: it is confidential, and so is every "
         "figure and memo made from it."),
    Term("National outcome (projection)", ACCURACY,
         "What a plan is expected to publish for a whole nation, from its group-size profile, without drawing "
         "noise: per level, the groups that get a total only or each sex × age table, the suppressed groups, the "
         "T1 and T2 rows and the mean |published − true| of a published total, each with its standard deviation "
         "over the noise. It follows the engine's rules exactly and agrees with the mean of repeated runs "
         "(`python -m engine run --no-coterminous`): coterminous copies are left out. `python -m engine project` "
         "writes it as a CSV; the planner, adaptive-tables, suppression and Scenarios pages and the memo's first "
         "page show it."),
    # ------------------------------------------------------------------ release
    Term("T1 and T2", RELEASE,
         "The published files: T1 holds one total per population group, T2 the sex × age cells and sex "
         "marginals of the groups that got a table."),
    Term("Post-processing", RELEASE,
         "Steps after the noise that cost no budget: totals as sums of their cells, negative counts clamped to 0 "
         "(if allow_negative_counts is false), suppression, coterminous copies."),
    Term("Suppression, p and T", RELEASE,
         "Below the state level, a group that got a total only has it published only if the noisy total is "
         "above a threshold T, the smallest count with P(noise ≤ T) ≥ p (zero_suppression_chance; 2020: 0.9999). "
         "A group with nobody in it is hidden with probability at least p. Released small counts are biased "
         "upward: only the lucky draws get through."),
    Term("Coterminous geographies", RELEASE,
         "Areas at different levels that cover the same blocks (a county with one tract; DC as state, county "
         "and place) get the counts of the highest unsuppressed level, so they agree."),
    Term("True counts (confidential)", RELEASE,
         "The noise-free counts of the input. The app tabulates them beside a release only to show what the "
         "noise does; they are confidential and never for publication."),
    # ------------------------------------------------------------------ other methods
    Term("Geographic spine", METHODS,
         "The nested areas a TopDown-style release measures, each inside exactly one parent: nation > state > "
         "county > tract > block group > block (Cumings-Menon et al.). Areas that cross it, such as places and "
         "AIANNH areas, are off the spine and must be built from spine units. SafeTab-P needs no spine: it "
         "tabulates places and AIANNH areas directly, each with its own budget."),
    Term("Off-spine entity distance (OSED)", METHODS,
         "The fewest published units that must be added or subtracted to build an area exactly, e.g. 2 for "
         "\"place minus one tract\". Every unit brings its own independent noise, so the noise variance of the "
         "built area grows with its OSED (Cumings-Menon et al.). The spine optimisation lowers the OSED of places "
         "and tribal areas."),
    Term("AIAN spine", METHODS,
         "The 2020 production spine before optimisation (Cumings-Menon et al.): the state-level total of all American "
         "Indian and Alaska Native (AIAN) tribal areas is put on the spine, and every state, county, tract and "
         "block group is split into its part inside those areas and its part outside, so that tribal areas sit "
         "closer to the spine. The spine optimisation starts from it."),
    Term("Entity threshold", METHODS,
         "A setting of the spine optimisation (production: 9): in each county, the places and AIANNH areas whose "
         "off-spine entity distance (OSED) from the tracts is above it are \"far\", and tract groups are merged "
         "only while those far entities' distances do not get worse. When no entity is that far, runs of "
         "consecutive tract groups are merged as the fan-out cutoff allows (the production code's rule, "
         "optimize_spine.py; Cumings-Menon et al., Sec. 4)."),
    Term("Spine optimisation", METHODS,
         "The Census TopDown Algorithm's regrouping of block groups and tract groups, county by county, so that "
         "places and AIANNH areas need few spine units (a small OSED); the fan-out cutoff limits how many units a "
         "group may hold."),
    Term("Bypassing", METHODS,
         "In a spine, a unit whose own measurement cannot lower any variance (for example a parent with a single "
         "child, which has the same count) is bypassed: it gets no budget, which moves down to its children "
         "(Cumings-Menon et al., Theorem 2 and Algorithm 3). Under zCDP only such single-child units go."),
    Term("Invariant", METHODS,
         "A figure published exactly, with no noise at all, such as each state's total population in the 2020 "
         "redistricting data. The counts below it are adjusted to add up to it. An invariant has no privacy "
         "protection: it is the disclosure that differential privacy exists to prevent, accepted on purpose."),
    Term("Margins (held exact)", METHODS,
         "The sums of a table over some of its axes: the grand total, the row sums, the column sums, or for a "
         "three-way table a two-way table of sums. On the Invariants page, the margins held exact are published "
         "with no noise, as invariants, and the cells' noise is projected so that the cells add up to them "
         "(Gao, Gong and Yu 2022: contingency table margins, e.g. their 14 × 24 × 20 table with two-way margins "
         "held at every location)."),
    Term("Subspace differential privacy", METHODS,
         "Differential privacy for the part of the data the invariants leave free (Gao, Gong and Yu 2022): the "
         "noise is projected so that the released counts meet the invariants exactly, and the guarantee holds "
         "for every question about the counts that the invariants do not already answer."),
    Term("Projection", METHODS,
         "Removing from the noise the part that would break a set of sums, leaving the rest: the released "
         "counts then add up exactly and each keeps a smaller, still unbiased noise. Invariants and least-squares "
         "consistency both work this way; the share of a count's noise variance that is left is its variance "
         "factor."),
    Term("Sensitivity", METHODS,
         "How much one person can change a query's answer: the largest change of the published numbers when one "
         "person is added or removed. The noise is scaled to it, so a query of sensitivity 1 needs half the noise "
         "of one of sensitivity 2 for the same budget. On the Consistency page's group-size study, a person joining "
         "or leaving a household moves the counts of households of each size by 2 in all, and the cumulative counts "
         "(households of at least 1, 2, 3, ... persons) by 1 (Fioretto, Van Hentenryck and Zhu, Lemmas 4 and 6). "
         "SafeTab-P's counterpart is the stability S."),
    Term("Hierarchical consistency", METHODS,
         "Making a group's published counts add up across nested areas (nation = sum of states, state = sum of "
         "counties, ...), after the noise. It is post-processing: it costs no privacy budget. SafeTab-P's own "
         "release is not consistent; the Consistency page compares the methods that make it so."),
    Term("Least squares", METHODS,
         "The consistent counts closest to the noisy ones, each move weighted by the count's noise variance, so "
         "the noisiest counts move most (Hay, Rastogi, Miklau and Suciu 2010). Unbiased and accurate, but it can "
         "give fractions and negative counts, which then have to be rounded."),
    Term("Tree dynamic program", METHODS,
         "The exact method of Fioretto, Van Hentenryck and Zhu: it finds the consistent, non-negative whole "
         "counts closest to the noisy ones, working up the tree of areas from the leaves (tracts) to the root "
         "(the nation). No negative counts; the price is some upward bias on small groups."),
    Term("Relax-then-round", METHODS,
         "A shortcut: solve the consistency problem without requiring whole numbers, then round each count on its "
         "own. Cheap, but rounding breaks the sums again, which is why the exact tree dynamic program is needed."),
    Term("Consistency violations and faithfulness", METHODS,
         "The two checks of the Consistency page's group-size study (Fioretto, Van Hentenryck and Zhu, Sec. 4 and "
         "Table 7). A consistency violation is a parent area and size whose released count differs from the sum "
         "of the counts of the areas inside it. Faithfulness: every level's group sizes add up to the public "
         "number of households; a level that does not is counted under \"levels not adding up to n\". The exact "
         "tree dynamic program has neither; relax-then-round usually has both."),
    Term("Cell suppression", METHODS,
         "The method used for detailed-group tables before differential privacy: publish exact counts, but "
         "withhold the cells that would disclose someone (primary suppression) and enough other cells that they "
         "cannot be worked out (complementary suppression)."),
    Term("Primary suppression", METHODS,
         "Withholding a cell because it is sensitive in itself: a small count (here: 1 up to one less than the "
         "smallest count shown), or, for business data, a cell that fails a dominance rule (p% or (n, k))."),
    Term("Complementary suppression", METHODS,
         "Withholding further, non-sensitive cells so that the primary ones cannot be worked out from the "
         "published totals by subtraction; chosen by linear programming to withhold as little as possible "
         "(Massell 2001)."),
    Term("Audit interval", METHODS,
         "The smallest and largest value a withheld cell can still take given everything published, found by "
         "two linear programs (minimise and maximise the cell subject to the published sums). If both are equal, "
         "the cell is recovered exactly; if the interval is narrower than the protection, it is not protected."),
    Term("Protection", METHODS,
         "How far above and below its true value a withheld cell's audit interval must reach (in persons here) "
         "for the cell to count as protected: an attacker who knows every published count must not be able to "
         "pin it down more closely than that."),
    Term("Capacity (how far a count may move)", METHODS,
         "In the linear program that picks complementary cells, how much a cell can contribute to protecting a "
         "primary one (Cox and Jewett; Massell 2001, \"Calculating capacities\"). In the simplest case, and by "
         "default on the Cell suppression page, it is the cell's own value: a count may move down to 0 but no "
         "further, so a zero count protects nothing. \"Unbounded\" lets counts rise without limit, which is what "
         "an attacker cannot rule out."),
    Term("Refinement run", METHODS,
         "Massell's second pass of complementary suppression (Massell 2001, \"Refinement Runs\"): the program "
         "runs again with only the first run's complements as candidates, small cells made the dearest, and keeps "
         "a subset of them that still protects every primary cell: never more cells, and usually fewer small ones."),
    Term("p% dominance rule", METHODS,
         "A primary-suppression rule for magnitude data (e.g. sales): a cell is sensitive if the other "
         "contributors' total would let the second-largest contributor estimate the largest one's value to within "
         "p percent (Massell 2001). Person counts use a minimum count instead."),
    Term("(n, k) dominance rule", METHODS,
         "A primary-suppression rule for magnitude data: a cell is sensitive if its n largest contributors make "
         "up more than k percent of its total, e.g. (1, 80): one business has more than 80% of the cell."),
)


def search(query: str = "", topic: str | None = None) -> list[Term]:
    """Terms whose name or meaning contains every word of `query` (case-insensitive),
    optionally of one topic, in glossary order."""
    words = query.lower().split()
    out = []
    for t in TERMS:
        if topic and t.topic != topic:
            continue
        text = f"{t.term} {t.meaning}".lower()
        if all(w in text for w in words):
            out.append(t)
    return out


def find(name: str) -> Term | None:
    """The term of this exact name (case-insensitive), or None."""
    low = name.strip().lower()
    return next((t for t in TERMS if t.term.lower() == low), None)


def link_params(name: str) -> dict[str, str]:
    """The glossary page's query parameters that open it on `name` (a term of TERMS)."""
    if find(name) is None:
        raise KeyError(f"no glossary term {name!r}")
    return {"term": name}
