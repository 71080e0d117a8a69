/**
 * A labelled evaluation set for the reconstruction probe (src/erasure/probe.ts):
 * a deterministic store of agent memory over many subjects, and labelled pairs
 * (erased record, surviving record) saying whether the surviving record carries the
 * erased record's content.
 *
 * The store (~5,000 records) is what an agent accumulates about a few hundred people:
 * personal notes written from a dozen fact templates (so their phrasing recurs, as an
 * agent's note-taking habits do), chat turns that restate those facts, emails to the
 * agent's user with greetings, company signatures and disclaimers, templated reminders,
 * tickets, delivery notices, calendar entries and receipts (each template ~200 times),
 * long meeting minutes of business filler, and extractive summaries (what
 * ExtractiveRegenerator writes: the first sentences of each source, in source order).
 * Words are drawn from Zipf-weighted pools, so document frequencies look like real
 * ones: a few very common words, a long tail of rare ones; surnames are unique.
 *
 * Each labelled pair has its own erased subject, who owns exactly the erased record.
 * Categories (positive = the surviving record carries the erased content):
 *   verbatim-in-long            + the erased record's main sentence quoted verbatim inside another
 *                                 subject's meeting minutes (300–3,000 words of filler), with 10–12
 *                                 decoy notes of a third subject that share a few of its words
 *   partial-quote               + 6–9 consecutive content words of the erased record (a cut of its
 *                                 text, sometimes with other stop words) inside another record; the cut
 *                                 holds at least two of the record's private words (slot values), so it
 *                                 quotes the person's content, not only the fact template's phrasing
 *   summarised                  + an extractive summary of several sources, one of them the erased
 *                                 record; 40% of them with the erased sentences' clauses reordered
 *   paraphrase-key-terms        + a rewording that keeps names, numbers, places and rare nouns
 *   paraphrase-no-shared-words  + a rewording that shares no content word (the built-in embedder is
 *                                 expected to miss these: reported, not asserted)
 *   template-only               − another instance of the same template, every slot value different
 *   public-attribute            − an unrelated record naming the erased person's city, employer or
 *                                 profession
 *   boilerplate                 − another email sharing only the greeting, closing, company signature
 *                                 and disclaimer (each recurring in > 2% of the store)
 *   disguise-zero-width         + the erased record's main sentence inside another record with a
 *                                 zero-width space after the first letter of every word
 *   disguise-look-alike         + the same with Latin letters replaced by their Cyrillic look-alikes
 *   disguise-soft-hyphen        + the same with a soft hyphen every second letter of each long word
 *   disguise-number             + a number the subject gave ("Mobile: +44 20 7946 0958") copied with its
 *                                 digit groups written another way (one side run together, the other
 *                                 spaced, dashed or dotted)
 * The disguise pairs are drawn after all the others, so the other categories' pairs are
 * the same as before they were added.
 *
 * The generator checks its own honesty and throws when a check fails: a no-shared-words
 * paraphrase shares no content word with the erased record; a key-term paraphrase holds
 * no run of 5 of its content words in order; a partial quote holds ≥ 6 in order; a
 * negative holds none of the erased record's private words (surname, codes, numbers,
 * rare nouns) and, for templates, no word of its slot values.
 */
import { sentences } from '../../src/artifacts/regenerator.js';
import { contentWords } from '../../src/vectors/shingles.js';
import { insideEveryWord, lookAlikes, NUMBER_FORMATS, REPLACED_LATIN, softHyphens } from '../support/disguises.js';
import { mulberry32 } from '../support/prng.js';

export type Category =
  | 'verbatim-in-long'
  | 'partial-quote'
  | 'summarised'
  | 'paraphrase-key-terms'
  | 'paraphrase-no-shared-words'
  | 'template-only'
  | 'public-attribute'
  | 'boilerplate'
  | 'disguise-zero-width'
  | 'disguise-look-alike'
  | 'disguise-soft-hyphen'
  | 'disguise-number';

export const CATEGORIES: readonly Category[] = [
  'verbatim-in-long',
  'partial-quote',
  'summarised',
  'paraphrase-key-terms',
  'paraphrase-no-shared-words',
  'template-only',
  'public-attribute',
  'boilerplate',
  'disguise-zero-width',
  'disguise-look-alike',
  'disguise-soft-hyphen',
  'disguise-number',
];

/** The disguised-copy categories (issue 29, M3): copies a reader cannot tell from the erased text. */
export const DISGUISE_CATEGORIES: readonly Category[] = ['disguise-zero-width', 'disguise-look-alike', 'disguise-soft-hyphen', 'disguise-number'];

export const POSITIVE: Readonly<Record<Category, boolean>> = {
  'verbatim-in-long': true,
  'partial-quote': true,
  summarised: true,
  'paraphrase-key-terms': true,
  'paraphrase-no-shared-words': true,
  'template-only': false,
  'public-attribute': false,
  boilerplate: false,
  'disguise-zero-width': true,
  'disguise-look-alike': true,
  'disguise-soft-hyphen': true,
  'disguise-number': true,
};

export interface StoreRecord {
  readonly id: string;
  readonly subject: string;
  readonly text: string;
  readonly kind: 'entry' | 'artifact';
}

export interface LabelledPair {
  /** The erased record's id (its subject owns nothing else). */
  readonly erased: string;
  readonly surviving: string;
  readonly category: Category;
  readonly positive: boolean;
}

export interface EvalCorpus {
  readonly store: StoreRecord[];
  readonly pairs: LabelledPair[];
  /** Decoys of the verbatim-in-long pairs: records sharing a few of the erased sentence's words (unlabelled, expected unflagged). */
  readonly decoys: Array<{ readonly erased: string; readonly decoy: string }>;
}

export interface CorpusOptions {
  readonly seed?: number;
  /** Labelled pairs per category (default 30). */
  readonly pairsPerCategory?: number;
  /** Background subjects (default 320). */
  readonly subjects?: number;
}

// ------------------------------------------------------------------ randomness


class Rng {
  readonly #next: () => number;
  readonly #cdfs = new WeakMap<readonly unknown[], Float64Array>();

  constructor(seed: number) {
    this.#next = mulberry32(seed);
  }

  float(): number {
    return this.#next();
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.#next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.#next() < p;
  }

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.#next() * xs.length)]!;
  }

  /** A Zipf-weighted pick (weight 1/(rank+1)^s): the first items are common, the tail rare. */
  zipf<T>(xs: readonly T[], s = 1): T {
    let cdf = this.#cdfs.get(xs);
    if (!cdf) {
      cdf = new Float64Array(xs.length);
      let acc = 0;
      for (let i = 0; i < xs.length; i++) cdf[i] = acc += 1 / Math.pow(i + 1, s);
      for (let i = 0; i < xs.length; i++) cdf[i]! /= acc;
      this.#cdfs.set(xs, cdf);
    }
    const u = this.#next();
    let lo = 0;
    let hi = xs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return xs[lo]!;
  }

  shuffle<T>(xs: readonly T[]): T[] {
    const out = [...xs];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.#next() * (i + 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }

  /** `n` distinct items of `xs`. */
  sample<T>(xs: readonly T[], n: number): T[] {
    return this.shuffle(xs).slice(0, n);
  }
}

// ------------------------------------------------------------------ pools

const FIRST_NAMES = [
  'Alice', 'Bruno', 'Chiara', 'Dmitri', 'Elena', 'Farid', 'Greta', 'Hiroshi', 'Ines', 'Jonas', 'Kaveh', 'Lucia', 'Mateo', 'Nadia', 'Oskar',
  'Priya', 'Quentin', 'Rosa', 'Stefan', 'Tamsin', 'Umar', 'Vera', 'Wendell', 'Ximena', 'Yusuf', 'Zofia', 'Amara', 'Bastien', 'Carmen',
  'Declan', 'Esther', 'Felix', 'Gwen', 'Hamza', 'Ilse', 'Joaquin', 'Keiko', 'Lars', 'Mirela', 'Nikolai', 'Olga', 'Pavel', 'Rania', 'Soren',
  'Tariq', 'Ursula', 'Viktor', 'Wanjiru', 'Yara', 'Zeynep', 'Anouk', 'Benedikt', 'Cosima', 'Dario', 'Elif', 'Fabian', 'Giulia', 'Henrik',
  'Ayesha', 'Jakob', 'Leila', 'Marek', 'Noor', 'Ottilie', 'Piotr', 'Renata', 'Sanjay', 'Tove', 'Ulrich', 'Valentina', 'Anselm', 'Bettina',
  'Cyrus', 'Dagny', 'Emeka', 'Freya', 'Gideon', 'Hana', 'Ivo', 'Jana', 'Kofi', 'Liesel', 'Magnus', 'Nina', 'Orla', 'Philippa', 'Rafael',
  'Saoirse', 'Thiago', 'Uma', 'Vilma', 'Wim', 'Xavier', 'Yvonne', 'Zoltan',
];

const SURNAME_HEADS = ['Bran', 'Kov', 'Oka', 'Whit', 'Tal', 'Mer', 'Dros', 'Hal', 'Vel', 'Sor', 'Quin', 'Lind', 'Mar', 'Ost', 'Pell', 'Rask', 'Stav', 'Tor', 'Ulm', 'Wex', 'Yar', 'Zim', 'Ash', 'Bel', 'Cor', 'Dun', 'Eck', 'Fen', 'Gar', 'Hux'];
const SURNAME_MIDS = ['', 'a', 'e', 'i', 'o', 'ber', 'den', 'ler', 'man', 'ri', 'ven', 'wick'];
const SURNAME_TAILS = ['dt', 'nko', 'for', 'field', 'berg', 'son', 'ova', 'etti', 'ard', 'ski', 'lund', 'ez', 'quist', 'ton', 'ley', 'mann', 'ic', 'elli'];

const CITIES = [
  'Lisbon', 'Berlin', 'Porto', 'Lyon', 'Milan', 'Valencia', 'Krakow', 'Utrecht', 'Ghent', 'Hamburg', 'Aarhus', 'Tallinn', 'Riga', 'Ljubljana',
  'Zagreb', 'Brno', 'Graz', 'Basel', 'Bilbao', 'Bologna', 'Genoa', 'Nantes', 'Bordeaux', 'Leeds', 'Bristol', 'Cork', 'Galway', 'Cardiff',
  'Seville', 'Turin', 'Gdansk', 'Rotterdam', 'Antwerp', 'Malmo', 'Tampere', 'Vilnius', 'Salzburg', 'Geneva', 'Marseille', 'Edinburgh',
];

/** The first six send the emails with signatures and disclaimers: each recurs in hundreds of records. */
const EMPLOYERS = [
  'Northwind Health', 'Bluepeak Logistics', 'Harbourline Finance', 'Meridian Insurance', 'Corvid Analytics', 'Solstice Energy',
  'Juniper Schools Trust', 'Oakridge Pharma', 'Quayside Architects', 'Redfern Retail', 'Tidewater Shipping', 'Umbra Games', 'Vantage Legal',
  'Willowbrook Care', 'Yellowtail Media', 'Alder Finch Accountants', 'Brightwell Telecom', 'Cobalt Robotics', 'Driftwood Hotels',
  'Evergreen Foods', 'Foxglove Pharmacy', 'Granite Construction', 'Heliotrope Labs', 'Ironbark Security', 'Kestrel Airlines', 'Lumen Optics',
  'Marigold Bakery', 'Nimbus Cloud Services', 'Orchard Dental', 'Pinecone Publishing',
];
const EMAIL_EMPLOYERS = EMPLOYERS.slice(0, 6);
const OTHER_EMPLOYERS = EMPLOYERS.slice(6);

const PROFESSIONS = [
  'software engineer', 'nurse', 'accountant', 'primary school teacher', 'pharmacist', 'architect', 'data analyst', 'paramedic',
  'civil engineer', 'dentist', 'solicitor', 'electrician', 'pilot', 'chef', 'physiotherapist', 'journalist', 'veterinarian', 'midwife',
  'translator', 'plumber', 'graphic designer', 'social worker', 'firefighter', 'librarian', 'surveyor', 'optician', 'carpenter',
  'radiographer', 'bookkeeper', 'sound engineer', 'landscape gardener', 'tax adviser', 'lab technician', 'court reporter', 'dietitian',
];

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const RELATIONS = ['sister', 'brother', 'cousin', 'aunt', 'uncle', 'neighbour', 'godmother', 'flatmate', 'best friend'];
const ALLERGENS = ['penicillin', 'peanuts', 'shellfish', 'latex', 'bee stings', 'sesame seeds', 'ibuprofen', 'kiwi fruit', 'tree nuts', 'sulfa drugs', 'mustard seed', 'lupin flour'];
const DEVICES = ['an epinephrine pen', 'an antihistamine kit', 'a rescue inhaler', 'an adrenaline injector', 'a dose of cetirizine'];
const COLOURS = ['blue', 'red', 'green', 'yellow', 'black', 'orange', 'grey', 'purple', 'teal', 'maroon'];
const BAGS = ['backpack', 'handbag', 'gym bag', 'laptop sleeve', 'cycling pannier', 'tote', 'rucksack', 'briefcase'];
const HIDEOUTS: ReadonlyArray<{ full: string; short: string }> = [
  { full: 'inside a hollowed-out dictionary on the top shelf', short: 'the hollowed-out dictionary' },
  { full: 'under the loose floorboard in the hallway', short: 'below the hallway floorboard' },
  { full: 'in the freezer behind the frozen peas', short: 'freezer, behind the peas' },
  { full: 'taped beneath the bottom desk drawer', short: 'under the desk drawer' },
  { full: 'inside the grandfather clock in the dining room', short: 'the grandfather clock' },
  { full: 'in the glovebox of the old camper van', short: 'camper van glovebox' },
  { full: 'behind the bathroom mirror cabinet', short: 'bathroom mirror cabinet' },
  { full: 'in a biscuit tin buried under the apple tree', short: 'biscuit tin by the apple tree' },
  { full: 'sewn into the lining of a winter coat', short: 'winter coat lining' },
  { full: 'inside the hollow leg of the piano stool', short: 'piano stool leg' },
];
const HIDDEN_THINGS = ['safe combination', 'spare key to the allotment shed', 'wedding ring from the first marriage', 'savings bonds', 'hard drive with the tax records', 'emergency cash', 'letters from the adoption agency', 'second passport'];
const STREETS = [
  'Rua das Flores', 'Elm Street', 'Calle Mayor', 'Via Garibaldi', 'Kastanienallee', 'Harbour Road', 'Prinsengracht', 'Linden Lane', 'Quarry Hill',
  'Sandpiper Close', 'Mill Lane', 'Rosemary Court', 'Rue Mercière', 'Ulica Dluga', 'Vesterbrogade', 'Tolbooth Wynd', 'Chapel Row', 'Ropewalk',
  'Saffron Walk', 'Kelp Terrace', 'Orchard Mews', 'Falcon Yard', 'Weaver Street', 'Juniper Crescent',
];
const CONDITIONS = ['type 1 diabetes', 'chronic migraines', 'severe asthma', 'a herniated disc', 'tinnitus', 'coeliac disease', 'an anxiety disorder', 'sleep apnoea', 'hypothyroidism', 'psoriasis', 'early glaucoma', 'atrial fibrillation'];
const MEDS = ['insulin glargine', 'sumatriptan', 'budesonide', 'pregabalin', 'levothyroxine', 'sertraline', 'apixaban', 'latanoprost drops', 'methotrexate', 'propranolol'];
const DOSES = ['10 mg', '25 mg', '50 mg', '75 mg', '100 mg', '150 mg', '12 units', '2 puffs'];
const TIMES_OF_DAY = ['morning', 'evening', 'night before bed', 'lunchtime'];
const DEBT_REASONS = ['restaurant partnership', 'house purchase', 'food truck venture', 'car sale', 'wedding planning business', 'vintage shop lease'];
const HOSPITALS = ['Santa Maria', 'St Brendan', 'Charité Nord', 'Ospedale San Luca', 'Riverside General', 'Hospital del Mar', 'Queen Adelaide', 'Mount Olive'];
const ROLES = ['head of data', 'senior designer', 'operations lead', 'principal engineer', 'regional sales director', 'clinical coordinator', 'product manager', 'finance controller'];
const HOTELS = ['Hotel Miramar', 'Casa Azul guesthouse', 'Grand Hotel Europa', 'Pension Edelweiss', 'Harbour Lights inn', 'Villa Serena', 'Hotel Kronprinz', 'Lighthouse lodge'];
const DESTINATIONS = ['Valletta', 'Reykjavik', 'Dubrovnik', 'Marrakesh', 'Tenerife', 'Palermo', 'Split', 'Funchal', 'Bergen', 'Corfu', 'Naxos', 'Tromso'];
const CARD_ISSUERS = ['Harbourline debit', 'Quayside Credit', 'Monzo', 'Revolut', 'Sparkasse', 'Millennium', 'ING', 'Santander'];
const EVENTS = ['charity gala', 'architecture biennale', 'offsite retreat', 'salsa festival', 'book fair', 'climbing trip', 'wine tasting', 'hackathon'];
const PETS = ['beagle', 'tabby cat', 'greyhound', 'cockatiel', 'rabbit', 'border collie', 'Siamese cat', 'dachshund'];
const PET_NAMES = ['Biscuit', 'Pepper', 'Mochi', 'Rufus', 'Waffles', 'Tango', 'Nacho', 'Pixel', 'Clementine', 'Bramble', 'Otis', 'Ziggy', 'Marmalade', 'Noodle', 'Fennel', 'Truffle'];
const PET_MEDS = ['thyroid tablets', 'insulin shots', 'heart medication', 'joint supplements', 'steroid drops', 'kidney diet powder'];
const CLINICS = ['Paws and Claws', 'Greenfield Veterinary', 'Ark Animal Clinic', 'Fox Hollow Vets', 'Tailwind Pet Hospital', 'Meadowbank Vets'];
const SCHOOLS = ['Lindenhof primary', 'St Columba school', 'Escola Azul', 'Riverside academy', 'Montessori Pequeno', 'Hazelwood primary'];

const APPT_TYPES = ['dental', 'physiotherapy', 'dermatology', 'eye', 'hearing', 'cardiology', 'blood test', 'vaccination', 'orthopaedic', 'allergy'];
const TIMES = ['08:15', '09:40', '10:05', '11:20', '12:55', '13:50', '14:35', '16:45', '17:25', '18:10', '07:30', '19:05'];
const TICKET_CATEGORIES = ['billing', 'account access', 'mobile app', 'data export', 'shipping', 'notifications'];
const PRIORITIES = ['low', 'normal', 'high', 'urgent'];
const ISSUES = [
  'cannot log in after the password reset', 'invoice shows the wrong billing address', 'mobile app crashes when uploading photos',
  'refund missing for a returned jacket', 'two-factor codes arrive late', 'export to spreadsheet stops halfway', 'parcel marked delivered but never arrived',
  'duplicate charge on the credit card', 'push alerts no longer appear', 'profile picture upload rejected', 'discount voucher not applied at checkout',
  'calendar sync drops recurring events', 'loyalty points vanished overnight', 'subscription renewed despite cancellation',
];
const MAIL_DOMAINS = ['mailbox.net', 'postfach.de', 'correio.pt', 'inbox.eu', 'posteo.org', 'fastmail.fm'];
const SHOPS = ['Lumen Home', 'Kettle and Crumb', 'Boxwood Books', 'Atlas Outdoor', 'Pixel Electronics', 'Fernhill Garden', 'Linen Loft', 'Copper Pan'];
const MEETING_KINDS = ['quarterly review', 'design critique', 'one-to-one', 'vendor call', 'interview panel', 'budget check-in', 'onboarding session', 'retrospective'];
const AGENDA_TOPICS = ['hiring plan for the autumn', 'migration of the billing service', 'warehouse lease renewal', 'brand refresh proposals', 'incident follow-up actions', 'training budget split', 'supplier shortlist', 'holiday rota'];

// business filler (meeting minutes, email bodies), Zipf-weighted in this order
const BIZ_NOUNS = [
  'budget', 'timeline', 'roadmap', 'release', 'customer', 'team', 'report', 'project', 'vendor', 'contract', 'invoice', 'dashboard', 'forecast',
  'backlog', 'sprint', 'audit', 'policy', 'training', 'workshop', 'campaign', 'launch', 'pricing', 'survey', 'feedback', 'renewal', 'office',
  'rollout', 'integration', 'pipeline', 'outage', 'incident', 'deadline', 'milestone', 'proposal', 'estimate', 'deliverable', 'stakeholder',
  'partner', 'supplier', 'warehouse', 'shipment', 'inventory', 'procurement', 'compliance', 'review', 'approval', 'newsletter', 'website',
  'database', 'server', 'licence', 'subscription', 'benchmark', 'metric', 'quarter', 'headcount', 'offsite', 'agenda', 'handover',
  'documentation', 'checklist', 'evaluation', 'pilot', 'prototype', 'mockup', 'translation', 'ticket', 'queue', 'escalation', 'refund',
  'discount', 'catalogue', 'brochure', 'booth', 'conference', 'webinar', 'interview', 'candidate', 'referral', 'payroll', 'expense',
  'reimbursement', 'badge', 'parking', 'canteen', 'printer', 'laptop', 'headset', 'kitchen', 'raffle', 'donation', 'sponsorship',
  'retention', 'churn', 'onboarding', 'appraisal', 'rota', 'tender', 'warranty', 'dependency', 'firmware', 'certificate', 'scorecard',
  'runbook', 'playbook', 'taxonomy', 'glossary', 'heatmap', 'wireframe', 'storyboard', 'moodboard', 'changelog', 'sandbox',
];
const BIZ_VERBS = [
  'review', 'finalise', 'update', 'circulate', 'share', 'schedule', 'prepare', 'draft', 'approve', 'postpone', 'escalate', 'test', 'document',
  'clarify', 'confirm', 'estimate', 'prioritise', 'archive', 'publish', 'negotiate', 'renew', 'cancel', 'book', 'order', 'replace', 'audit',
  'present', 'summarise', 'track', 'monitor', 'investigate', 'fix', 'deploy', 'reconcile', 'benchmark', 'localise', 'deprecate', 'triage',
];
const BIZ_PARTICIPLES = [
  'approved', 'delayed', 'signed', 'blocked', 'finished', 'shipped', 'reviewed', 'cancelled', 'budgeted', 'staffed', 'migrated', 'tested', 'merged',
];
const BIZ_ADJS = [
  'new', 'revised', 'quarterly', 'annual', 'final', 'internal', 'external', 'upcoming', 'previous', 'urgent', 'minor', 'major', 'regional',
  'shared', 'updated', 'preliminary', 'detailed', 'simplified', 'automated', 'manual', 'legacy', 'interim', 'cross-team', 'provisional',
];
const TEAMS = ['finance', 'legal', 'marketing', 'design', 'operations', 'support', 'sales', 'the data team', 'HR', 'facilities', 'the security team', 'the mobile team', 'procurement', 'the platform team'];
const WHEN = ['next week', 'the end of the month', 'Friday', 'the next sync', 'the board meeting', 'mid-June', 'the summer break', 'Q3', 'the audit', 'Thursday'];
const STATUS = ['on track', 'at risk', 'behind schedule', 'waiting on legal', 'blocked by the vendor', 'ahead of plan'];

const DISCLAIMERS: Readonly<Record<string, string>> = {
  'Northwind Health':
    'CONFIDENTIALITY NOTICE: This email and any attachments are confidential and intended solely for the addressee. If you received it in error, please notify the sender and delete it. Northwind Health does not accept liability for any errors or omissions in the contents of this message.',
  'Bluepeak Logistics':
    'This message may contain privileged information. Any unauthorised review, use, disclosure or distribution is prohibited. Bluepeak Logistics monitors email traffic for security purposes. Please consider the environment before printing.',
  'Harbourline Finance':
    'Harbourline Finance is authorised and regulated by the financial conduct authority. Nothing in this email constitutes investment advice. Emails are not secure and may be intercepted; we accept no responsibility for changes made after sending.',
  'Meridian Insurance':
    'Meridian Insurance: the information transmitted is intended only for the person or entity to which it is addressed. Views expressed are those of the individual sender unless stated otherwise. Registered office as shown on our website.',
  'Corvid Analytics':
    'Corvid Analytics respects your privacy. This communication is intended for the named recipient only; if you are not the intended recipient you must not copy, forward or rely on it. Our privacy notice explains how we process personal data.',
  'Solstice Energy':
    'Solstice Energy: please do not print this email unless necessary. The contents are confidential and may be legally privileged. If this reached you by mistake, tell us by replying and then remove it from your systems.',
};
const SIGNATURE_LINES: Readonly<Record<string, string>> = {
  'Northwind Health': 'Northwind Health | 221 Harbour Street, Lisbon | +351 21 555 0142 | northwindhealth.example',
  'Bluepeak Logistics': 'Bluepeak Logistics GmbH | Speicherstadt 9, Hamburg | +49 40 555 3310 | bluepeak.example',
  'Harbourline Finance': 'Harbourline Finance plc | 3 Quay Parade, Bristol | +44 117 555 0199 | harbourline.example',
  'Meridian Insurance': 'Meridian Insurance SA | Avenue de la Gare 14, Geneva | +41 22 555 7720 | meridian.example',
  'Corvid Analytics': 'Corvid Analytics BV | Oudegracht 88, Utrecht | +31 30 555 4406 | corvid.example',
  'Solstice Energy': 'Solstice Energy SL | Gran Via 61, Bilbao | +34 944 555 218 | solstice.example',
};
const GREETINGS = ['Hi Sam,', 'Hello Sam,', 'Dear Sam,'];
const CLOSINGS = ['Best regards,', 'Kind regards,', 'Thanks,', 'Cheers,'];

// ------------------------------------------------------------------ people and facts

interface Person {
  readonly subject: string;
  readonly first: string;
  readonly last: string;
  readonly city: string;
  readonly employer: string;
  readonly profession: string;
}

/** One private fact about a person, in the forms the categories need. */
interface Fact {
  /** The fact as the agent wrote it (1–2 sentences). */
  readonly text: string;
  /** The same content, clauses reordered. */
  readonly reordered: string;
  /** A rewording that keeps names, numbers, places and rare nouns. */
  readonly keyTerms: string;
  /** A rewording that shares no content word. */
  readonly noShared: string;
  /** Single words of the fact (decoys borrow them). */
  readonly nouns: readonly string[];
  /** Private slot values: no negative may contain a word of them. */
  readonly secrets: readonly string[];
}

type FactTemplate = (r: Rng, p: Person, g: Gen) => Fact;

const year = (r: Rng) => String(r.int(1998, 2023));
const code = (r: Rng) => `${r.int(1000, 9999)}${r.pick(['', 'B', 'K', 'X', 'Z'])}`;

const FACTS: readonly FactTemplate[] = [
  // allergy
  (r, p) => {
    const allergen = r.pick(ALLERGENS);
    const device = r.pick(DEVICES);
    const colour = r.pick(COLOURS);
    const bag = r.pick(BAGS);
    const dev = device.replace(/^(an?|a dose of) /, '');
    return {
      text: `${p.first} ${p.last} is allergic to ${allergen} and always carries ${device} in the ${colour} pouch of the ${bag}.`,
      reordered: `In the ${colour} pouch of the ${bag}, ${p.first} ${p.last} always carries ${device}, being allergic to ${allergen}.`,
      keyTerms: `Health flag for ${p.last}, ${p.first}: ${allergen} allergy; ${dev} goes everywhere in that ${colour} ${bag} pouch.`,
      noShared: 'Someone we know reacts badly to one particular substance, so emergency medicine stays within reach whenever they head out.',
      nouns: [allergen.split(' ').pop()!, bag.split(' ').pop()!, 'pouch'],
      secrets: [p.last, allergen, dev],
    };
  },
  // hiding place
  (r, p, g) => {
    const hide = r.pick(HIDEOUTS);
    const thing = r.pick(HIDDEN_THINGS);
    const rel = r.pick(RELATIONS);
    const relName = g.firstName(r, [p.first]);
    return {
      text: `${p.first} ${p.last} keeps the ${thing} ${hide.full}; only ${relName}, the ${rel}, knows where it is.`,
      reordered: `Only ${relName}, the ${rel}, knows that ${p.first} ${p.last} keeps the ${thing} ${hide.full}.`,
      keyTerms: `${relName} (${rel}) is the sole person told: ${p.last}'s ${thing} is stashed ${hide.short.startsWith('the') ? 'in ' : ''}${hide.short}.`,
      noShared: 'There is a secret spot at home for a valuable item, and just one relative has been let in on it.',
      nouns: [thing.split(' ').pop()!, hide.short.replace(/^the /, '').split(/[ ,]+/).pop()!],
      secrets: [p.last, thing, hide.full],
    };
  },
  // address and door code
  (r, p) => {
    const num = String(r.int(2, 240));
    const street = r.pick(STREETS);
    const month = r.pick(MONTHS);
    const door = code(r);
    return {
      text: `${p.first} ${p.last} moved to ${num} ${street} in ${p.city} in ${month}; the building door code is ${door}.`,
      reordered: `The building door code is ${door} at ${num} ${street}, ${p.city}, where ${p.first} ${p.last} moved in ${month}.`,
      keyTerms: `New address for ${p.last}: ${street} ${num}, ${p.city} (since ${month}), keypad ${door} at the entrance.`,
      noShared: 'Recently relocated to a flat across town; getting inside needs a keypad number.',
      nouns: [street.split(' ').pop()!, p.city],
      secrets: [p.last, `${num} ${street}`, door],
    };
  },
  // medical
  (r, p) => {
    const condition = r.pick(CONDITIONS);
    const med = r.pick(MEDS);
    const dose = r.pick(DOSES);
    const when = r.pick(TIMES_OF_DAY);
    const y = year(r);
    return {
      text: `${p.first} ${p.last} was diagnosed with ${condition} in ${y} and takes ${dose} of ${med} every ${when}.`,
      reordered: `Every ${when}, ${p.first} ${p.last} takes ${dose} of ${med}, following the ${y} diagnosis of ${condition}.`,
      keyTerms: `${med}, ${dose}, each ${when}: prescribed to ${p.first} ${p.last} for ${condition}, found ${y}.`,
      noShared: 'A long illness was identified some time back, so a pill is part of the daily routine.',
      nouns: [condition.split(' ').pop()!, med.split(' ')[0]!],
      secrets: [p.last, med, condition],
    };
  },
  // debt
  (r, p, g) => {
    const amount = String(r.int(12, 95) * 100);
    const creditor = g.fullName(r, [p.first]);
    const reason = r.pick(DEBT_REASONS);
    const month = r.pick(MONTHS);
    const y = String(r.int(2025, 2027));
    return {
      text: `${p.first} ${p.last} owes ${amount} euros to ${creditor} after the ${reason} fell through, and has promised to repay it by ${month} ${y}.`,
      reordered: `By ${month} ${y}, ${p.first} ${p.last} has promised to repay the ${amount} euros owed to ${creditor}, after the ${reason} fell through.`,
      keyTerms: `Debt: ${amount} EUR from ${p.last}; since the ${reason} collapsed, ${creditor} is owed, due back ${month} ${y}.`,
      noShared: 'Borrowed cash from an acquaintance when a joint plan went wrong and intends to settle up later.',
      nouns: [reason.split(' ').pop()!, 'euros'],
      secrets: [p.last, amount, creditor.split(' ')[1]!],
    };
  },
  // newborn
  (r, p, g) => {
    const child = g.firstName(r, [p.first]);
    const day = String(r.int(1, 28));
    const month = r.pick(MONTHS);
    const y = String(r.int(2019, 2024));
    const hospital = r.pick(HOSPITALS);
    const kg = `${r.int(2, 4)}.${r.int(1, 9)}`;
    return {
      text: `${p.first} ${p.last}'s daughter ${child} was born on ${day} ${month} ${y} at ${hospital} hospital, weighing ${kg} kilos.`,
      reordered: `Born at ${hospital} hospital on ${day} ${month} ${y} and weighing ${kg} kilos, ${child} is the daughter of ${p.first} ${p.last}.`,
      keyTerms: `Congratulations to ${p.first} ${p.last}: baby ${child}, ${kg} kg, delivered at ${hospital} (${month} ${day}, ${y}).`,
      noShared: 'A little girl came into the world recently, healthy and a good size.',
      nouns: [hospital.split(' ').pop()!, child],
      secrets: [p.last, hospital, child, y],
    };
  },
  // custody
  (r, p, g) => {
    const ex = g.fullName(r, [p.first]);
    const city = r.pick(CITIES.filter((c) => c !== p.city));
    const day = String(r.int(1, 28));
    const month = r.pick(MONTHS);
    return {
      text: `${p.first} ${p.last} is in a custody dispute with ${ex}, and the hearing at the ${city} family court is set for ${day} ${month}.`,
      reordered: `The hearing at the ${city} family court, set for ${day} ${month}, concerns the custody dispute between ${p.first} ${p.last} and ${ex}.`,
      keyTerms: `${p.last} v ${ex.split(' ')[1]}: custody case before the ${city} court on ${day} ${month}.`,
      noShared: 'A separated parent is fighting an ex-partner over the children, and a judge rules soon.',
      nouns: [city, 'court'],
      secrets: [p.last, ex.split(' ')[1]!, 'custody'],
    };
  },
  // job hunt
  (r, p) => {
    const employer = r.pick(EMPLOYERS.filter((e) => e !== p.employer));
    const role = r.pick(ROLES);
    const salary = String(r.int(48, 140) * 1000);
    return {
      text: `${p.first} ${p.last} is secretly interviewing at ${employer} for a ${role} role paying ${salary} a year and has not told the manager.`,
      reordered: `Without telling the manager, ${p.first} ${p.last} is interviewing for a ${role} role at ${employer} that pays ${salary} a year.`,
      keyTerms: `Confidential: ${p.last} in talks with ${employer} about a ${salary} job as ${role}; boss unaware.`,
      noShared: 'Quietly looking for another position elsewhere with a bigger wage, and the boss has no idea.',
      nouns: [employer.split(' ')[0]!, role.split(' ').pop()!],
      secrets: [p.last, salary, role],
    };
  },
  // travel
  (r, p) => {
    const dest = r.pick(DESTINATIONS);
    const flight = `${r.pick(['TP', 'LH', 'FR', 'U2', 'KL', 'IB', 'SK'])}${r.int(100, 9899)}`;
    const day = r.int(1, 20);
    const month = r.pick(MONTHS);
    const hotel = r.pick(HOTELS);
    return {
      text: `${p.first} ${p.last} flies to ${dest} on flight ${flight} on ${day} ${month} and will stay at the ${hotel} until the ${day + 6}th.`,
      reordered: `Until the ${day + 6}th, ${p.first} ${p.last} will stay at the ${hotel} in ${dest}, flying there on flight ${flight} on ${day} ${month}.`,
      keyTerms: `Trip: ${p.last}, ${flight} to ${dest} (${day} ${month}), booked into the ${hotel}, checkout the ${day + 6}th.`,
      noShared: 'Heading abroad by plane soon for about a week away, lodging reserved near the beach.',
      nouns: [dest, hotel.split(' ').pop()!],
      secrets: [p.last, flight, hotel],
    };
  },
  // PIN
  (r, p) => {
    const pin = String(r.int(1000, 9999));
    const issuer = r.pick(CARD_ISSUERS);
    return {
      text: `${p.first} ${p.last} uses the PIN ${pin} for the ${issuer} card and the same digits for the garage door.`,
      reordered: `For the garage door and for the ${issuer} card, ${p.first} ${p.last} uses the same PIN, ${pin}.`,
      keyTerms: `${p.last} (${p.first}): the ${issuer} card and the garage both open with ${pin}.`,
      noShared: 'One secret number unlocks both their bank account and the house entrance.',
      nouns: ['garage', issuer.split(' ')[0]!],
      secrets: [p.last, pin],
    };
  },
  // relationship
  (r, p, g) => {
    const partner = g.fullName(r, [p.first]);
    const event = r.pick(EVENTS);
    const city = r.pick(CITIES.filter((c) => c !== p.city));
    return {
      text: `${p.first} ${p.last} has been seeing ${partner} since the ${event} in ${city}, but the two keep it hidden from colleagues at ${p.employer}.`,
      reordered: `Since the ${event} in ${city}, ${p.first} ${p.last} and ${partner} have been seeing each other, hidden from colleagues at ${p.employer}.`,
      keyTerms: `${p.last} and ${partner}: together since the ${city} ${event}; nobody at ${p.employer} suspects.`,
      noShared: 'A quiet romance began at a gathering last year and the office still has no clue.',
      nouns: [event.split(' ').pop()!, city],
      secrets: [p.last, partner.split(' ')[1]!, event],
    };
  },
  // pet
  (r, p) => {
    const pet = r.pick(PETS);
    const name = r.pick(PET_NAMES);
    const med = r.pick(PET_MEDS);
    const clinic = r.pick(CLINICS);
    const fee = String(r.int(35, 140));
    return {
      text: `${p.first} ${p.last}'s ${pet} ${name} needs ${med} twice a day, and the vet at ${clinic} charges ${fee} euros per visit.`,
      reordered: `The vet at ${clinic} charges ${fee} euros per visit for ${name}, the ${pet} of ${p.first} ${p.last}, who needs ${med} twice a day.`,
      keyTerms: `${name} (${p.last}'s ${pet}) is on ${med}, 2x daily; ${clinic} bills ${fee} EUR a consultation.`,
      noShared: 'Their furry companion requires medicine morning and evening, and each checkup is expensive.',
      nouns: [name, pet.split(' ').pop()!],
      secrets: [p.last, name, clinic],
    };
  },
  // school pickup
  (r, p, g) => {
    const child = g.firstName(r, [p.first]);
    const school = r.pick(SCHOOLS);
    const time = r.pick(TIMES.slice(6, 11));
    const minder = g.firstName(r, [p.first, child]);
    const gate = code(r);
    return {
      text: `${child} ${p.last}, ${p.first}'s daughter, is collected from ${school} at ${time} by the childminder ${minder}, who has the gate code ${gate}.`,
      reordered: `The childminder ${minder}, who has the gate code ${gate}, collects ${child} ${p.last} from ${school} at ${time} for ${p.first}.`,
      keyTerms: `Pickup: ${minder} fetches ${child} (${p.first} ${p.last}'s girl) at ${time} from ${school}; gate ${gate}.`,
      noShared: 'A babysitter brings their little girl home each afternoon and can open the playground entrance.',
      nouns: [school.split(' ')[0]!, 'childminder'],
      secrets: [p.last, gate, school],
    };
  },
];

/** Low-content sentences an agent adds around a fact. */
const CONTEXT_SENTENCES: ReadonlyArray<(r: Rng, p: Person) => string> = [
  (_r, p) => `${p.first} asked that this stays between us.`,
  (r) => `Noted during the ${r.pick(WEEKDAYS)} check-in.`,
  (_r, p) => `${p.first} brought it up twice last week.`,
  () => 'Do not mention it in the team channel.',
  (r, p) => `Heard this from ${p.first} over coffee on ${r.pick(WEEKDAYS)}.`,
  () => 'Worth remembering before the next call.',
];

// ------------------------------------------------------------------ generator

/** State shared by the templates: names in use, ids. */
class Gen {
  readonly r: Rng;
  readonly store: StoreRecord[] = [];
  readonly #surnames = new Set<string>();
  #entries = 0;
  #artifacts = 0;
  #subjects = 0;

  constructor(r: Rng) {
    this.r = r;
  }

  surname(r: Rng): string {
    for (;;) {
      const s = `${r.pick(SURNAME_HEADS)}${r.pick(SURNAME_MIDS)}${r.pick(SURNAME_TAILS)}`;
      // two surnames stemming alike would be one word to the probe
      const key = contentWords(s).join(' ');
      if (!this.#surnames.has(key)) {
        this.#surnames.add(key);
        return s;
      }
    }
  }

  firstName(r: Rng, not: readonly string[] = []): string {
    for (;;) {
      const f = r.zipf(FIRST_NAMES, 0.6);
      if (!not.includes(f)) return f;
    }
  }

  fullName(r: Rng, not: readonly string[] = []): string {
    return `${this.firstName(r, not)} ${this.surname(r)}`;
  }

  person(r: Rng, options: { employer?: string } = {}): Person {
    const subject = `subj_${String(++this.#subjects).padStart(4, '0')}`;
    const employer = options.employer ?? (r.chance(0.55) ? r.pick(EMAIL_EMPLOYERS) : r.zipf(OTHER_EMPLOYERS, 0.8));
    return { subject, first: this.firstName(r), last: this.surname(r), city: r.zipf(CITIES, 0.9), employer, profession: r.zipf(PROFESSIONS, 0.8) };
  }

  add(subject: string, text: string, kind: 'entry' | 'artifact' = 'entry'): string {
    const id = kind === 'entry' ? `entry_${String(++this.#entries).padStart(5, '0')}` : `artifact_${String(++this.#artifacts).padStart(5, '0')}`;
    this.store.push({ id, subject, text, kind });
    return id;
  }

  // ---------------------------------------------------------------- filler

  bizSentence(r: Rng): string {
    const P = () => this.firstName(r);
    const n = () => r.zipf(BIZ_NOUNS, 0.9);
    const v = () => r.zipf(BIZ_VERBS, 0.8);
    const a = () => r.zipf(BIZ_ADJS, 0.8);
    switch (r.int(0, 9)) {
      case 0:
        return `${P()} gave an update on the ${a()} ${n()}; ${r.pick(TEAMS)} will ${v()} the ${n()} by ${r.pick(WHEN)}.`;
      case 1:
        return `Action: ${P()} to ${v()} the ${n()} and ${v()} the ${a()} ${n()} with ${r.pick(TEAMS)}.`;
      case 2:
        return `${P()} noted that the ${n()} is ${r.pick(STATUS)} because of the ${n()}.`;
      case 3:
        return `Decision: we will ${v()} the ${n()} until the ${n()} is ${r.pick(BIZ_PARTICIPLES)}.`;
      case 4:
        return `Discussion of the ${a()} ${n()} took most of the time; ${P()} and ${P()} disagreed about the ${n()}.`;
      case 5:
        return `${P()} asked whether the ${n()} could be ${r.pick(BIZ_PARTICIPLES)} before ${r.pick(WHEN)}.`;
      case 6:
        return `No update on the ${n()} this week.`;
      case 7: {
        const team = r.pick(TEAMS);
        return `${team[0]!.toUpperCase()}${team.slice(1)} reported ${r.int(2, 40)} open ${n()} items and a ${a()} ${n()}.`;
      }
      case 8:
        return `The ${a()} ${n()} needs a ${n()} owner; ${P()} volunteered.`;
      default:
        return `${P()} will ${v()} the ${n()} ${n()} and share it before ${r.pick(WHEN)}.`;
    }
  }

  /** Meeting minutes of about `words` words; `insert` (if any) at a random position among the sentences. */
  minutes(r: Rng, words: number, insert?: string): string {
    const attendees = Array.from({ length: r.int(3, 7) }, () => this.firstName(r));
    const head = `Meeting minutes, ${r.pick(TEAMS)} weekly sync, ${r.int(1, 28)} ${r.pick(MONTHS)}. Attendees: ${[...new Set(attendees)].join(', ')}.`;
    const body: string[] = [];
    let count = head.split(/\s+/).length;
    while (count < words) {
      const s = this.bizSentence(r);
      body.push(s);
      count += s.split(/\s+/).length;
    }
    if (insert) body.splice(r.int(0, body.length), 0, insert);
    return `${head}\n${body.join(' ')}\nNext meeting in one week.`;
  }

  // ---------------------------------------------------------------- templates

  readonly templates: ReadonlyArray<(r: Rng, p: Person) => { text: string; slots: string[] }> = [
    (r, p) => {
      const s = [r.pick(APPT_TYPES), this.surname(r), r.pick(WEEKDAYS), String(r.int(1, 28)), r.pick(MONTHS), r.pick(TIMES)];
      return {
        text: `Reminder: ${p.first} ${p.last} has a ${s[0]} appointment with Dr. ${s[1]} on ${s[2]} ${s[3]} ${s[4]} at ${s[5]}. Please arrive 10 minutes early and bring your insurance card. Reply C to confirm or R to reschedule.`,
        slots: [p.first, p.last, ...s],
      };
    },
    (r, p) => {
      const s = [String(r.int(100000, 999999)), `${p.first.toLowerCase()}.${p.last.toLowerCase()}@${r.pick(MAIL_DOMAINS)}`, r.pick(TICKET_CATEGORIES), r.pick(PRIORITIES), r.pick(ISSUES)];
      return {
        text: `Support ticket #${s[0]} opened by ${p.first} ${p.last} (${s[1]}). Category: ${s[2]}. Priority: ${s[3]}. Summary: ${s[4]}. Status: open. Our team will respond within 24 hours in line with the service level agreement. Please do not reply to this automated message.`,
        slots: [p.first, p.last, ...s],
      };
    },
    (r, p) => {
      const s = [String(r.int(1000000, 9999999)), r.pick(SHOPS), String(r.int(2, 240)), r.pick(STREETS), p.city, r.pick(WEEKDAYS), r.pick(TIMES.slice(0, 6)), r.pick(TIMES.slice(6)), `${r.pick(['JJD', 'CP', 'RR'])}${r.int(100000000, 999999999)}`];
      return {
        text: `Your order ${s[0]} from ${s[1]} will be delivered to ${p.first} ${p.last} at ${s[2]} ${s[3]}, ${s[4]} on ${s[5]} between ${s[6]} and ${s[7]}. Track your parcel with code ${s[8]} on the courier's website.`,
        slots: [p.first, p.last, ...s],
      };
    },
    (r, p) => {
      const s = [r.pick(MEETING_KINDS), r.pick(WEEKDAYS), String(r.int(1, 28)), r.pick(MONTHS), r.pick(TIMES), `${r.pick(['A', 'B', 'C'])}${r.int(101, 499)}`, r.pick(AGENDA_TOPICS)];
      return {
        text: `Calendar: ${s[0]} with ${p.first} ${p.last} on ${s[1]} ${s[2]} ${s[3]} at ${s[4]} in room ${s[5]}. Agenda: ${s[6]}. The video link will be shared 15 minutes before the start.`,
        slots: [p.first, p.last, ...s],
      };
    },
    (r, p) => {
      const s = [`${r.int(20, 4999)}.${String(r.int(0, 99)).padStart(2, '0')}`, String(r.int(10000, 99999)), String(r.int(1, 28)), r.pick(MONTHS), String(r.int(2022, 2025))];
      return {
        text: `Payment confirmation: ${s[0]} EUR received from ${p.first} ${p.last} for invoice INV-${s[1]} on ${s[2]} ${s[3]} ${s[4]}. Thank you for your payment. This receipt was generated automatically; keep it for your records.`,
        slots: [p.first, p.last, ...s],
      };
    },
  ];

  // ---------------------------------------------------------------- emails

  email(r: Rng, p: Person, body: string): string {
    return this.emailWith(p, r.pick(GREETINGS), r.pick(CLOSINGS), body);
  }

  /** An email to the agent's user: greeting, body, closing, the sender's name, then the company signature and disclaimer (or a phone sign-off). */
  emailWith(p: Person, greeting: string, closing: string, body: string): string {
    const lines = [greeting, '', body, '', closing, `${p.first} ${p.last}`];
    const sig = SIGNATURE_LINES[p.employer];
    const disclaimer = DISCLAIMERS[p.employer];
    if (sig && disclaimer) lines.push(sig, '', disclaimer);
    else lines.push('Sent from my phone');
    return lines.join('\n');
  }

  emailBody(r: Rng, p: Person): string {
    const openers = [
      'Quick follow-up on our call.',
      'Sorry for the slow reply.',
      'Hope you had a good weekend.',
      'As promised, here is where things stand.',
      'Just a short note before I forget.',
    ];
    const n = r.int(1, 3);
    const parts = [r.pick(openers)];
    for (let i = 0; i < n; i++) parts.push(this.bizSentence(r));
    if (r.chance(0.3)) parts.push(`I am in ${p.city} until ${r.pick(WEEKDAYS)} if you want to meet.`);
    parts.push(r.pick(['Let me know what you think.', 'Talk soon.', 'Happy to discuss.', 'Shout if anything is unclear.']));
    return parts.join(' ');
  }

  // ---------------------------------------------------------------- other records

  workNote(p: Person): string {
    return `${p.first} ${p.last} works as a ${p.profession} at ${p.employer} in ${p.city}.`;
  }

  chatTurn(r: Rng, p: Person, fact: Fact): string {
    const q = r.pick([
      `User: What do we know about ${p.first}?`,
      `User: Remind me what ${p.first} told me last time.`,
      `User: Anything I should keep in mind before meeting ${p.first}?`,
      `User: Can you pull up my notes on ${p.first} ${p.last}?`,
    ]);
    return `${q}\nAssistant: ${r.chance(0.5) ? fact.keyTerms : fact.text} ${r.pick(['Want me to set a reminder?', 'Anything else?', 'I can add this to the calendar.', ''])}`.trim();
  }

  miscNote(r: Rng, p: Person): string {
    const n = () => r.zipf(BIZ_NOUNS, 0.9);
    return r.pick([
      () => `Called ${p.first} ${p.last} about the ${n()}; follow up on ${r.pick(WEEKDAYS)}.`,
      () => `${p.first} sent over the ${n()} for the ${n()}, looks fine.`,
      () => `Lunch with ${p.first} at the place near the station; talked about the ${n()} and holidays.`,
      () => `${p.first} prefers ${r.pick(['email', 'phone calls', 'text messages', 'video calls'])} and mornings before ${r.pick(TIMES.slice(1, 5))}.`,
      () => `${p.first} ${p.last} is back from leave on ${r.pick(WEEKDAYS)}.`,
    ])();
  }

  /** What ExtractiveRegenerator writes: the first four sentences of each source, in order, without repeats. */
  summary(sources: readonly string[]): string {
    const seen = new Set<string>();
    const kept: string[] = [];
    for (const text of sources) {
      let taken = 0;
      for (const s of sentences(text)) {
        if (taken >= 4) break;
        const norm = s.toLowerCase().replace(/\s+/g, ' ');
        if (seen.has(norm)) continue;
        seen.add(norm);
        kept.push(s);
        taken++;
      }
    }
    return kept.join(' ');
  }
}

// ------------------------------------------------------------------ honesty checks

const wordsOf = (text: string) => new Set(contentWords(text));

function sharedWords(a: string, b: string): string[] {
  const wa = wordsOf(a);
  return [...wordsOf(b)].filter((w) => wa.has(w));
}

/** The longest run of content words of `a` found consecutively, in order, in `b`. */
export function longestRun(a: string, b: string): number {
  const x = contentWords(a);
  const y = contentWords(b);
  let best = 0;
  const prev = new Array<number>(y.length + 1).fill(0);
  for (let i = 1; i <= x.length; i++) {
    let diag = 0;
    for (let j = 1; j <= y.length; j++) {
      const keep = prev[j]!;
      prev[j] = x[i - 1] === y[j - 1] ? diag + 1 : 0;
      if (prev[j]! > best) best = prev[j]!;
      diag = keep;
    }
  }
  return best;
}

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`probe-eval corpus is dishonest: ${what}`);
}

/** A negative must hold no word of the erased record's private values. */
function checkNoSecrets(secrets: readonly string[], surviving: string, what: string, allowed: ReadonlySet<string> = new Set()): void {
  const w = wordsOf(surviving);
  // one- and two-character tokens (a digit of "3.9 kilos", an initial) are not distinctive; `allowed` are the
  // words the negative is meant to share (the public attribute: "primary" of "primary school teacher")
  for (const s of secrets) {
    for (const x of contentWords(s)) if (x.length >= 3 && !allowed.has(x)) check(!w.has(x), `${what}: the negative holds the private word "${x}"`);
  }
}

// ------------------------------------------------------------------ the corpus

export function generateCorpus(options: CorpusOptions = {}): EvalCorpus {
  const r = new Rng(options.seed ?? 20_240_611);
  const perCategory = options.pairsPerCategory ?? 30;
  const g = new Gen(r);
  const pairs: LabelledPair[] = [];
  const decoys: EvalCorpus['decoys'] = [];

  // ---------------------------------------------------------------- background subjects
  const people: Person[] = [];
  const generic: Array<{ id: string; text: string }> = [];
  const nSubjects = options.subjects ?? 320;
  for (let i = 0; i < nSubjects; i++) {
    const p = g.person(r);
    people.push(p);
    generic.push({ id: g.add(p.subject, g.workNote(p)), text: g.workNote(p) });
    const facts = r.sample(FACTS, 2).map((f) => f(r, p, g));
    for (const f of facts) {
      const text = r.chance(0.3) ? `${f.text} ${r.pick(CONTEXT_SENTENCES)(r, p)}` : f.text;
      generic.push({ id: g.add(p.subject, text), text });
    }
    for (let k = 0; k < 2; k++) {
      const text = g.chatTurn(r, p, r.pick(facts));
      generic.push({ id: g.add(p.subject, text), text });
    }
    for (let k = 0; k < 3; k++) g.add(p.subject, g.email(r, p, g.emailBody(r, p)));
    for (let k = 0; k < 3; k++) g.add(p.subject, r.pick(g.templates)(r, p).text);
    g.add(p.subject, g.miscNote(r, p));
  }
  // long meeting minutes and summaries of the background
  for (let i = 0; i < 60; i++) g.add(r.pick(people).subject, g.minutes(r, r.int(300, 1500)));
  for (let i = 0; i < 120; i++) {
    const sources = r.sample(generic, r.int(3, 6)).map((s) => s.text);
    g.add('workspace', g.summary(sources), 'artifact');
  }

  const other = (not: Person) => {
    for (;;) {
      const p = r.pick(people);
      if (p.first !== not.first) return p;
    }
  };

  // ---------------------------------------------------------------- labelled pairs
  const label = (category: Category, erased: string, surviving: string) => pairs.push({ erased, surviving, category, positive: POSITIVE[category] });

  for (let i = 0; i < perCategory; i++) {
    // 1. verbatim-in-long: the main sentence inside another subject's minutes; decoys share a few of its words
    {
      const e = g.person(r);
      const fact = r.pick(FACTS)(r, e, g);
      const parts = [fact.text];
      if (r.chance(0.6)) parts.unshift(r.pick(CONTEXT_SENTENCES)(r, e));
      if (r.chance(0.5)) parts.push(r.pick(CONTEXT_SENTENCES)(r, e));
      const erased = g.add(e.subject, parts.join(' '));
      const owner = other(e);
      const words = Math.round(300 * Math.pow(10, r.float())); // 300–3,000, log-uniform
      const surviving = g.add(owner.subject, g.minutes(r, words, fact.text));
      check(g.store.at(-1)!.text.includes(fact.text), 'verbatim quote missing');
      label('verbatim-in-long', erased, surviving);
      const decoySubject = g.person(r);
      const nDecoys = r.int(10, 12);
      for (let k = 0; k < nDecoys; k++) {
        const [a, b] = r.sample(fact.nouns, 2);
        const text = r.pick([
          () => `Need to sort out the ${a} before ${r.pick(WEEKDAYS)}; also check on the ${b}.`,
          () => `${g.firstName(r)} mentioned a ${a} at the market, nothing to do with the ${b}.`,
          () => `Shopping list: ${a}, milk, bread, ${b}.`,
          () => `Found an old ${a} in the attic next to the ${b}.`,
          () => `Podcast episode about ${a} was surprisingly good.`,
          () => `Ask ${e.first} whether the ${a} is still available.`,
        ])();
        decoys.push({ erased, decoy: g.add(decoySubject.subject, text) });
      }
    }

    // 2. partial-quote: 6–9 consecutive content words of the erased record inside another record
    {
      const e = g.person(r);
      const fact = r.pick(FACTS)(r, e, g);
      const second = r.pick(FACTS)(r, e, g);
      const text = r.chance(0.5) ? `${fact.text} ${second.text}` : `${fact.text} ${r.pick(CONTEXT_SENTENCES)(r, e)}`;
      const erased = g.add(e.subject, text);
      const tokens = fact.text.split(/\s+/);
      const want = r.int(6, 9);
      // the cut must carry something private (a slot value), not only the fact template's phrasing
      const secret = new Set(fact.secrets.flatMap((x) => contentWords(x)).filter((w) => w.length >= 3));
      let span = '';
      for (let attempt = 0; attempt < 400 && !span; attempt++) {
        const start = r.int(0, tokens.length - 1);
        for (let end = start + 1; end <= tokens.length; end++) {
          const cut = tokens.slice(start, end).join(' ');
          const words = contentWords(cut);
          // the wanted length, else (a fact with few private words) no shorter than 6
          if (words.length >= (attempt < 200 ? want : 6)) {
            if (words.filter((w) => secret.has(w)).length >= 2) span = cut.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '');
            break;
          }
        }
      }
      check(span.length > 0, `no span of ${want} words in: ${fact.text} (${[...secret].join(', ')})`);
      // half of them with other stop words: the content words stay in order
      if (r.chance(0.5)) span = span.replace(/\bthe\b/g, 'a').replace(/\band\b/g, '&');
      const o = other(e);
      const quote = r.pick([
        () => `${o.first} forwarded this without comment: "${span}". Will look into it on ${r.pick(WEEKDAYS)}.`,
        () => `User: someone told me ${span}, is that right?\nAssistant: I cannot confirm that, sorry.`,
        () => `From the voicemail ${o.first} left: ${span} ... the rest was cut off.`,
        () => g.email(r, o, `Overheard at the ${r.pick(EVENTS)}: ${span}. No idea if it is true.`),
      ])();
      const surviving = g.add(o.subject, quote);
      check(longestRun(text, quote) >= 6, 'partial quote shorter than 6 content words');
      label('partial-quote', erased, surviving);
    }

    // 3. summarised: an extractive summary of several sources, the erased record among them
    {
      const e = g.person(r);
      const fact = r.pick(FACTS)(r, e, g);
      const text = r.chance(0.5) ? `${fact.text} ${r.pick(CONTEXT_SENTENCES)(r, e)}` : fact.text;
      const erased = g.add(e.subject, text);
      const reorder = i % 5 < 2;
      const sources = r.sample(generic, r.int(2, 5)).map((s) => s.text);
      sources.splice(r.int(0, sources.length), 0, reorder ? text.replace(fact.text, fact.reordered) : text);
      const summary = g.summary(sources);
      check(reorder || summary.includes(fact.text), 'summary lost the erased sentence');
      const surviving = g.add('workspace', summary, 'artifact');
      label('summarised', erased, surviving);
    }

    // 4. paraphrase-key-terms: names, numbers, places and rare nouns kept, wording changed
    {
      const e = g.person(r);
      const fact = r.pick(FACTS)(r, e, g);
      const erased = g.add(e.subject, fact.text);
      const o = other(e);
      const wrapped = r.pick([
        () => `User: note for later. ${fact.keyTerms}\nAssistant: Saved.`,
        () => `Jotted down after talking to ${o.first}: ${fact.keyTerms}`,
        () => g.email(r, o, `Passing this on. ${fact.keyTerms} Keep it to yourself.`),
      ])();
      check(longestRun(fact.text, wrapped) < 5, `key-term paraphrase is a quote: ${fact.keyTerms}`);
      check(sharedWords(fact.text, fact.keyTerms).length >= 3, 'key-term paraphrase shares too little');
      const surviving = g.add(o.subject, wrapped);
      label('paraphrase-key-terms', erased, surviving);
    }

    // 5. paraphrase-no-shared-words
    {
      const e = g.person(r);
      const fact = r.pick(FACTS)(r, e, g);
      const erased = g.add(e.subject, fact.text);
      const wrapped = r.pick([
        () => `User: FYI. ${fact.noShared}\nAssistant: Understood.`,
        () => `Overheard: ${fact.noShared}`,
        () => `${fact.noShared} (said in confidence)`,
      ])();
      check(sharedWords(fact.text, wrapped).length === 0, `no-shared paraphrase shares words: ${sharedWords(fact.text, wrapped).join(', ')} in "${wrapped}"`);
      const surviving = g.add(other(e).subject, wrapped);
      label('paraphrase-no-shared-words', erased, surviving);
    }

    // 6. template-only: another instance of the same template, every slot value different
    {
      const e = g.person(r);
      const t = r.pick(g.templates);
      const mine = t(r, e);
      const erased = g.add(e.subject, mine.text);
      let theirs: { text: string; slots: string[] } | undefined;
      let o: Person | undefined;
      for (let attempt = 0; attempt < 200 && !theirs; attempt++) {
        o = other(e);
        const c = t(r, o);
        const mineWords = new Set(mine.slots.flatMap((s) => contentWords(s)));
        if (c.slots.flatMap((s) => contentWords(s)).every((w) => !mineWords.has(w))) theirs = c;
      }
      check(theirs !== undefined, 'no disjoint template instance');
      const surviving = g.add(o!.subject, theirs!.text);
      label('template-only', erased, surviving);
    }

    // 7. public-attribute: an unrelated record naming the same city, employer or profession
    {
      const e = g.person(r);
      const fact = r.pick(FACTS)(r, e, g);
      const erasedText = `${g.workNote(e)} ${fact.text}`;
      const erased = g.add(e.subject, erasedText);
      const P = g.firstName(r, [e.first]);
      const which = i % 3;
      let text = '';
      let attribute = new Set<string>();
      for (let attempt = 0; attempt < 50; attempt++) {
        // a third of them: another person's work note naming the same attribute (and the note's template words)
        const colleague = other(e);
        const workNote = g.workNote({
          ...colleague,
          city: which === 0 ? e.city : r.pick(CITIES.filter((c) => c !== e.city)),
          employer: which === 1 ? e.employer : r.pick(EMPLOYERS.filter((c) => c !== e.employer)),
          profession: which === 2 ? e.profession : r.pick(PROFESSIONS.filter((c) => c !== e.profession)),
        });
        text = r.chance(1 / 3)
          ? workNote
          : which === 0
            ? r.pick([
                () => `The ${e.city} office will close early on ${r.pick(WEEKDAYS)} for the regional holiday.`,
                () => `Weather in ${e.city} looks grim for the weekend, so the team picnic moved indoors.`,
                () => `${P} recommends a tapas bar near the old harbour in ${e.city}.`,
                () => `Conference on urban cycling in ${e.city} next spring; registration opens in ${r.pick(MONTHS)}.`,
                () => `Train strike in ${e.city} on ${r.pick(WEEKDAYS)}; ${P} will dial in instead.`,
              ])()
            : which === 1
              ? r.pick([
                  () => `${e.employer} announced a new parental leave policy this week.`,
                  () => `${P} interviewed at ${e.employer} but turned the offer down.`,
                  () => `Quarterly results from ${e.employer} beat expectations again.`,
                  () => `${e.employer} is sponsoring the charity run in ${r.pick(MONTHS)}.`,
                ])()
              : r.pick([
                  () => `${P} is training to become a ${e.profession} and studies on weekends.`,
                  () => `Saved an article about burnout among ${e.profession}s for later.`,
                  () => `The ${e.profession} who fixed the issue last year has retired, according to ${P}.`,
                  () => `Career fair next month: a ${e.profession} will give a talk on the job.`,
                ])();
        attribute = wordsOf(which === 0 ? e.city : which === 1 ? e.employer : e.profession);
        if (sharedWords(erasedText, text).every((w) => attribute.has(w))) break;
        text = '';
      }
      check(text !== '', 'no clean public-attribute record');
      checkNoSecrets([...fact.secrets, e.first, e.last], text, 'public-attribute', attribute);
      const surviving = g.add(other(e).subject, text);
      label('public-attribute', erased, surviving);
    }

    // 8. boilerplate: another email from a colleague at the same company, sharing greeting, closing, signature and disclaimer only
    {
      const employer = EMAIL_EMPLOYERS[i % EMAIL_EMPLOYERS.length]!;
      const e = g.person(r, { employer });
      const greeting = r.pick(GREETINGS);
      const closing = r.pick(CLOSINGS);
      const boilerplate = wordsOf(`${greeting} ${closing} ${SIGNATURE_LINES[employer]} ${DISCLAIMERS[employer]}`);
      // a fact whose private words are not also words of the boilerplate ("Harbour Road" beside "221 Harbour Street")
      let fact = r.pick(FACTS)(r, e, g);
      while (fact.secrets.some((x) => contentWords(x).some((w) => boilerplate.has(w)))) fact = r.pick(FACTS)(r, e, g);
      const erasedText = g.emailWith(e, greeting, closing, `Something personal, please keep it quiet. ${fact.text}`);
      const colleagues = people.filter((p) => p.employer === employer && p.first !== e.first);
      let theirs = '';
      let owner: Person | undefined;
      for (let attempt = 0; attempt < 100 && !theirs; attempt++) {
        owner = r.pick(colleagues);
        const c = g.emailWith(owner, greeting, closing, g.emailBody(r, owner));
        if (sharedWords(erasedText, c).every((w) => boilerplate.has(w))) theirs = c;
      }
      check(theirs !== '', 'no boilerplate-only email');
      checkNoSecrets([...fact.secrets, e.first, e.last], theirs, 'boilerplate');
      const erased = g.add(e.subject, erasedText);
      const surviving = g.add(owner!.subject, theirs);
      label('boilerplate', erased, surviving);
    }
  }

  // ---------------------------------------------------------------- disguised copies (drawn last: the pairs above stay as they were)
  const disguises: Array<[Category, (text: string) => string]> = [
    ['disguise-zero-width', (t) => insideEveryWord(t)],
    ['disguise-look-alike', lookAlikes],
    ['disguise-soft-hyphen', softHyphens],
  ];
  for (let i = 0; i < perCategory; i++) {
    for (const [category, disguise] of disguises) {
      const e = g.person(r);
      const fact = r.pick(FACTS)(r, e, g);
      const erased = g.add(e.subject, r.chance(0.5) ? `${fact.text} ${r.pick(CONTEXT_SENTENCES)(r, e)}` : fact.text);
      const copy = disguise(fact.text);
      check(copy !== fact.text && !copy.includes(fact.text), `${category}: the copy is not disguised`);
      if (category === 'disguise-look-alike') check(!REPLACED_LATIN.test(copy), 'a look-alike copy keeps a Latin letter it should replace');
      const o = other(e);
      const surviving = g.add(
        o.subject,
        r.pick([
          () => `${o.first} forwarded this without comment: "${copy}" Will look into it on ${r.pick(WEEKDAYS)}.`,
          () => `User: someone told me ${copy} Is that right?\nAssistant: I cannot confirm that, sorry.`,
          () => g.email(r, o, `Overheard at the ${r.pick(EVENTS)}: ${copy} No idea if it is true.`),
        ])(),
      );
      label(category, erased, surviving);
    }
    // a number the subject gave, copied with its digit groups written another way (one side run together, so no
    // group is a word of both); the line's label is common, the number is what is private
    {
      const e = g.person(r);
      const groups = [String(r.int(20, 99)), String(r.int(20, 99)), String(r.int(1000, 9999)), String(r.int(1000, 9999))];
      const joined = NUMBER_FORMATS[1]!;
      const mine = r.pick(NUMBER_FORMATS);
      const theirs = mine === joined ? r.pick(NUMBER_FORMATS.filter((f) => f !== joined)) : joined;
      const what = r.pick(['Mobile', 'Private line', 'Home phone', 'Direct line', 'Account number', 'Card number']);
      const erased = g.add(e.subject, `${what}: ${mine(groups)}`);
      const o = other(e);
      const copy = `${what}: ${theirs(groups)}`;
      check(mine !== theirs && (mine === joined || theirs === joined), 'disguise-number: both sides share a digit group');
      const surviving = g.add(
        o.subject,
        r.pick([
          () => `Contacts to add before ${r.pick(WEEKDAYS)}:\n${copy}`,
          () => `${o.first} passed this on: ${copy}.`,
          () => g.email(r, o, `In case you need it. ${copy}.`),
        ])(),
      );
      label('disguise-number', erased, surviving);
    }
  }

  return { store: g.store, pairs, decoys };
}
