// bench_bullet — the Bullet soft-body peer of bench_clothd.
//
// Hangs the same curtain as bench_clothd in Bullet's btSoftBody and times
// btSoftRigidDynamicsWorld::stepSimulation(dt, 0): one internal step of
// exactly dt, no substeps, no interpolation, no rigid bodies in the world.
//
// The curtain: W x W nodes, spacing 0.1 m, total mass 1 kg spread evenly,
// node (x, y) at (x*s, -y*s, 0), the top row (y = 0) fixed with setMass(i, 0).
// Links: CreatePatch(gendiags = true) gives the structural links and one
// diagonal per quad; generateBendingConstraints(2) adds every pair of nodes at
// graph distance 2. Materials (linear stiffness kLST, Bullet's per-projection
// fraction like clothd's stiffness): structural 0.9, diagonals 0.72 (clothd's
// shear = 0.8 x stiffness), bending 0.5. kDP (velocity damping per step) 0.01,
// piterations 8, gravity (0, -9.81, 0), dt 1/60.
//
// Usage:
//   bench_bullet                   runs the default script (32, 64, 128) and
//                                  prints one BULLET line per case
//   bench_bullet --serve           reads commands from stdin, one per line,
//                                  and answers each with one line (see below);
//                                  bench/run.py drives it this way so that it
//                                  can interleave samples with bench_clothd.
// Commands (answers are `TAG {json}` lines, flushed):
//   curtain N ITERS WARMUP   build the timed curtain, run WARMUP steps -> READY
//   sample STEPS             time STEPS steps of the timed curtain  -> SAMPLE
//   strain N ITERS STEPS     fresh curtain, STEPS steps, max strain -> STRAIN
//   free                     drop the timed curtain                 -> FREED
//   quit
// Errors are reported as `ERROR {"message":...}` and the exit code is 1.

#include <btBulletDynamicsCommon.h>
#include <BulletSoftBody/btSoftBody.h>
#include <BulletSoftBody/btSoftBodyHelpers.h>
#include <BulletSoftBody/btSoftBodyRigidBodyCollisionConfiguration.h>
#include <BulletSoftBody/btSoftRigidDynamicsWorld.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <time.h>

namespace {

constexpr float kSpacing = 0.1f;
constexpr float kTotalMass = 1.0f;
constexpr float kStiffness = 0.9f;
constexpr float kShearFactor = 0.8f;
constexpr float kBendStiffness = 0.5f;
constexpr float kDamping = 0.01f;
constexpr float kGravity = -9.81f;
constexpr float kDt = 1.0f / 60.0f;

// generateBendingConstraints(2) builds an n x n adjacency matrix (4 n^2 bytes:
// 1 GiB at 128 x 128). Above this many nodes the same link set is built by
// add_distance2_links below, which appends exactly the links Bullet would, in
// the same order (checked by `selfcheck`).
constexpr int kBulletBendMaxNodes = 64 * 64;

double now_seconds() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

// Same link set and order as btSoftBody::generateBendingConstraints(2): for
// j ascending, for i > j ascending, a link (i, j) when i and j are at graph
// distance exactly 2 over the existing links.
int add_distance2_links(btSoftBody* body, btSoftBody::Material* mat) {
    const int n = body->m_nodes.size();
    const btSoftBody::Node* base = &body->m_nodes[0];
    std::vector<std::vector<int>> adj(n);
    for (int k = 0; k < body->m_links.size(); ++k) {
        const int a = int(body->m_links[k].m_n[0] - base);
        const int b = int(body->m_links[k].m_n[1] - base);
        adj[a].push_back(b);
        adj[b].push_back(a);
    }
    std::vector<int> mark(n, -1);  // mark[i] == j: i is within distance 1 of j
    std::vector<int> found;
    int added = 0;
    for (int j = 0; j < n; ++j) {
        mark[j] = j;
        for (int a : adj[j]) mark[a] = j;
        found.clear();
        for (int a : adj[j]) {
            for (int b : adj[a]) {
                if (b > j && mark[b] != j) {
                    mark[b] = j;
                    found.push_back(b);
                }
            }
        }
        std::sort(found.begin(), found.end());
        for (int i : found) {
            body->appendLink(i, j, mat);
            body->m_links[body->m_links.size() - 1].m_bbending = 1;
            ++added;
        }
    }
    return added;
}

// Patch: the idiomatic Bullet curtain (CreatePatch with gendiags, then
// generateBendingConstraints(2)). Matched: clothd's own constraint list, same
// pairs, rest lengths, stiffnesses and order (structural rows, structural
// columns, both diagonals of every quad, skip-one rows, skip-one columns), to
// compare the solvers on equal work.
enum class LinkSet { Patch, Matched };

struct Curtain {
    std::unique_ptr<btSoftBodyRigidBodyCollisionConfiguration> config;
    std::unique_ptr<btCollisionDispatcher> dispatcher;
    std::unique_ptr<btBroadphaseInterface> broadphase;
    std::unique_ptr<btSequentialImpulseConstraintSolver> solver;
    std::unique_ptr<btSoftRigidDynamicsWorld> world;
    btSoftBody* body = nullptr;  // owned by us, registered in world
    int n = 0;
    int iters = 0;
    int links = 0, structural = 0, diagonal = 0, bending = 0;
    bool own_bend = false;
    LinkSet set = LinkSet::Patch;

    Curtain() = default;
    Curtain(const Curtain&) = delete;
    Curtain& operator=(const Curtain&) = delete;
    ~Curtain() {
        if (body) {
            world->removeSoftBody(body);
            delete body;
        }
    }
};

enum class BendMode { Auto, Bullet, Own };

const char* link_set_name(LinkSet set) { return set == LinkSet::Patch ? "patch" : "matched"; }

bool parse_link_set(const std::string& word, LinkSet* out) {
    if (word.empty() || word == "patch") {
        *out = LinkSet::Patch;
        return true;
    }
    if (word == "matched") {
        *out = LinkSet::Matched;
        return true;
    }
    return false;
}

// Replaces CreatePatch's links with clothd's constraint list.
void build_matched_links(Curtain& c, btSoftBody* body, btSoftBody::Material* structural,
                         btSoftBody::Material* shear, btSoftBody::Material* bend) {
    const int n = c.n;
    body->m_links.resize(0);
    auto at = [n](int x, int y) { return y * n + x; };
    for (int y = 0; y < n; ++y)
        for (int x = 0; x + 1 < n; ++x) body->appendLink(at(x, y), at(x + 1, y), structural);
    for (int y = 0; y + 1 < n; ++y)
        for (int x = 0; x < n; ++x) body->appendLink(at(x, y), at(x, y + 1), structural);
    c.structural = body->m_links.size();
    for (int y = 0; y + 1 < n; ++y)
        for (int x = 0; x + 1 < n; ++x) {
            body->appendLink(at(x, y), at(x + 1, y + 1), shear);
            body->appendLink(at(x + 1, y), at(x, y + 1), shear);
        }
    c.diagonal = body->m_links.size() - c.structural;
    for (int y = 0; y < n; ++y)
        for (int x = 0; x + 2 < n; ++x) body->appendLink(at(x, y), at(x + 2, y), bend);
    for (int y = 0; y + 2 < n; ++y)
        for (int x = 0; x < n; ++x) body->appendLink(at(x, y), at(x, y + 2), bend);
    c.bending = body->m_links.size() - c.structural - c.diagonal;
    for (int i = c.structural + c.diagonal; i < body->m_links.size(); ++i)
        body->m_links[i].m_bbending = 1;
}

std::unique_ptr<Curtain> make_curtain(int n, int iters, BendMode mode,
                                      LinkSet set = LinkSet::Patch) {
    auto c = std::make_unique<Curtain>();
    c->set = set;
    c->n = n;
    c->iters = iters;
    c->config = std::make_unique<btSoftBodyRigidBodyCollisionConfiguration>();
    c->dispatcher = std::make_unique<btCollisionDispatcher>(c->config.get());
    c->broadphase = std::make_unique<btDbvtBroadphase>();
    c->solver = std::make_unique<btSequentialImpulseConstraintSolver>();
    c->world = std::make_unique<btSoftRigidDynamicsWorld>(c->dispatcher.get(), c->broadphase.get(),
                                                          c->solver.get(), c->config.get());
    c->world->setGravity(btVector3(0, kGravity, 0));
    btSoftBodyWorldInfo& info = c->world->getWorldInfo();
    info.m_broadphase = c->broadphase.get();
    info.m_dispatcher = c->dispatcher.get();
    info.m_gravity = btVector3(0, kGravity, 0);
    info.m_sparsesdf.Initialize();

    const btScalar side = kSpacing * btScalar(n - 1);
    btSoftBody* body = btSoftBodyHelpers::CreatePatch(
        info, btVector3(0, 0, 0), btVector3(side, 0, 0), btVector3(0, -side, 0),
        btVector3(side, -side, 0), n, n, /*fixeds=*/0, /*gendiags=*/set == LinkSet::Patch);

    // Materials: [0] structural (CreatePatch's default), then shear, bending.
    btSoftBody::Material* structural = body->m_materials[0];
    structural->m_kLST = kStiffness;
    btSoftBody::Material* shear = body->appendMaterial();
    shear->m_kLST = kStiffness * kShearFactor;
    btSoftBody::Material* bend = body->appendMaterial();
    bend->m_kLST = kBendStiffness;

    const int nodes = n * n;
    if (set == LinkSet::Matched) {
        build_matched_links(*c, body, structural, shear, bend);
    } else {
        // CreatePatch's links: rest length == spacing (structural) or the
        // quad's diagonal (shear). Tell them apart by rest length.
        for (int i = 0; i < body->m_links.size(); ++i) {
            btSoftBody::Link& l = body->m_links[i];
            if (l.m_rl > kSpacing * 1.2f) {
                l.m_material = shear;
                ++c->diagonal;
            } else {
                ++c->structural;
            }
        }
        c->own_bend =
            mode == BendMode::Own || (mode == BendMode::Auto && nodes > kBulletBendMaxNodes);
        if (c->own_bend)
            c->bending = add_distance2_links(body, bend);
        else
            c->bending = body->generateBendingConstraints(2, bend);
    }
    c->links = body->m_links.size();

    body->m_cfg.piterations = iters;
    body->m_cfg.kDP = kDamping;
    body->m_cfg.kDG = 0;
    body->m_cfg.kLF = 0;
    for (int i = 0; i < nodes; ++i) body->setMass(i, kTotalMass / btScalar(nodes));
    for (int x = 0; x < n; ++x) body->setMass(x, 0);  // row 0 = top row
    body->setActivationState(DISABLE_DEACTIVATION);
    body->updateConstants();  // still in the rest shape: rest lengths stay exact

    c->world->addSoftBody(body);
    c->body = body;
    return c;
}

void step(Curtain& c, int steps) {
    for (int i = 0; i < steps; ++i) c.world->stepSimulation(kDt, 0);
}

// Largest |d - s| / s over the grid neighbours (the structural links).
double max_structural_strain(const Curtain& c) {
    const int n = c.n;
    const btSoftBody::tNodeArray& nodes = c.body->m_nodes;
    double worst = 0;
    for (int y = 0; y < n; ++y) {
        for (int x = 0; x < n; ++x) {
            const btVector3& p = nodes[y * n + x].m_x;
            if (x + 1 < n) {
                const double d = (nodes[y * n + x + 1].m_x - p).length();
                worst = std::max(worst, std::fabs(d - kSpacing) / kSpacing);
            }
            if (y + 1 < n) {
                const double d = (nodes[(y + 1) * n + x].m_x - p).length();
                worst = std::max(worst, std::fabs(d - kSpacing) / kSpacing);
            }
        }
    }
    return worst;
}

bool all_finite(const Curtain& c) {
    for (int i = 0; i < c.body->m_nodes.size(); ++i) {
        const btVector3& p = c.body->m_nodes[i].m_x;
        if (!std::isfinite(p.x()) || !std::isfinite(p.y()) || !std::isfinite(p.z())) return false;
    }
    return true;
}

// CPU time of the calling thread: unlike wall time, it does not grow while
// other processes of a shared machine have the core.
double thread_cpu_seconds() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

void emit(const char* tag, const std::string& json) {
    std::printf("%s %s\n", tag, json.c_str());
    std::fflush(stdout);
}

int fail(const std::string& message) {
    emit("ERROR", "{\"engine\":\"bullet\",\"message\":\"" + message + "\"}");
    return 1;
}

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

struct Session {
    std::unique_ptr<Curtain> timed;
    BendMode mode = BendMode::Auto;

    // Returns 0 to go on, 1 on error, 2 on quit.
    int run(const std::string& line) {
        std::istringstream in(line);
        std::string cmd;
        if (!(in >> cmd)) return 0;
        if (cmd == "curtain") {
            int n = 0, iters = 0, warmup = 0;
            std::string word;
            LinkSet set;
            if (!(in >> n >> iters >> warmup) || n < 2 || iters < 1 || warmup < 0 ||
                (in >> word, !parse_link_set(word, &set)))
                return fail("curtain: expected N ITERS WARMUP [patch|matched]");
            timed.reset();
            const double t0 = now_seconds();
            timed = make_curtain(n, iters, mode, set);
            const double t1 = now_seconds();
            step(*timed, warmup);
            const double t2 = now_seconds();
            if (!all_finite(*timed)) return fail("curtain: non-finite positions after warm-up");
            emit("READY", fmt("{\"engine\":\"bullet\",\"links_set\":\"%s\",\"n\":%d,\"iters\":%d,"
                              "\"nodes\":%d,\"links\":%d,\"structural\":%d,\"diagonal\":%d,"
                              "\"bending\":%d,\"bend_links_by\":\"%s\","
                              "\"setup_s\":%.3f,\"warmup_steps\":%d,\"warmup_us\":%.2f}",
                              link_set_name(set), n, iters, n * n, timed->links, timed->structural,
                              timed->diagonal, timed->bending,
                              set == LinkSet::Matched ? "clothd-list"
                              : timed->own_bend       ? "bench"
                                                      : "bullet",
                              t1 - t0, warmup,
                              warmup > 0 ? (t2 - t1) * 1e6 / warmup : 0.0));
            return 0;
        }
        if (cmd == "sample") {
            int steps = 0;
            if (!(in >> steps) || steps < 1) return fail("sample: expected STEPS >= 1");
            if (!timed) return fail("sample: no curtain");
            const double c0 = thread_cpu_seconds();
            const double t0 = now_seconds();
            step(*timed, steps);
            const double t1 = now_seconds();
            const double cpu_us = (thread_cpu_seconds() - c0) * 1e6 / steps;
            if (!all_finite(*timed)) return fail("sample: non-finite positions");
            const double us = (t1 - t0) * 1e6 / steps;
            emit("SAMPLE", fmt("{\"engine\":\"bullet\",\"n\":%d,\"steps\":%d,\"us\":%.3f,"
                               "\"cpu_us\":%.3f,\"projections_per_s\":%.0f}",
                               timed->n, steps, us, cpu_us,
                               double(timed->links) * timed->iters / (us * 1e-6)));
            return 0;
        }
        if (cmd == "strain") {
            int n = 0, iters = 0, steps = 0;
            std::string word;
            LinkSet set;
            if (!(in >> n >> iters >> steps) || n < 2 || iters < 1 || steps < 0 ||
                (in >> word, !parse_link_set(word, &set)))
                return fail("strain: expected N ITERS STEPS [patch|matched]");
            auto c = make_curtain(n, iters, mode, set);
            step(*c, steps);
            if (!all_finite(*c)) return fail("strain: non-finite positions");
            emit("STRAIN", fmt("{\"engine\":\"bullet\",\"links_set\":\"%s\",\"n\":%d,\"iters\":%d,"
                               "\"steps\":%d,\"strain\":%.6f}",
                               link_set_name(set), n, iters, steps, max_structural_strain(*c)));
            return 0;
        }
        if (cmd == "selfcheck") {
            // Our distance-2 links must equal generateBendingConstraints(2)'s.
            int n = 0;
            if (!(in >> n) || n < 2) return fail("selfcheck: expected N");
            auto a = make_curtain(n, 8, BendMode::Bullet);
            auto b = make_curtain(n, 8, BendMode::Own);
            bool same = a->links == b->links;
            const btSoftBody::Node* ba = &a->body->m_nodes[0];
            const btSoftBody::Node* bb = &b->body->m_nodes[0];
            for (int i = 0; same && i < a->links; ++i) {
                const btSoftBody::Link& la = a->body->m_links[i];
                const btSoftBody::Link& lb = b->body->m_links[i];
                same = la.m_n[0] - ba == lb.m_n[0] - bb && la.m_n[1] - ba == lb.m_n[1] - bb &&
                       la.m_rl == lb.m_rl;
            }
            emit("SELFCHECK", fmt("{\"engine\":\"bullet\",\"n\":%d,\"links\":%d,\"same\":%s}", n,
                                  a->links, same ? "true" : "false"));
            return same ? 0 : 1;
        }
        if (cmd == "free") {
            timed.reset();
            emit("FREED", "{\"engine\":\"bullet\"}");
            return 0;
        }
        if (cmd == "quit") return 2;
        return fail("unknown command: " + cmd);
    }
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Stand-alone run: every case in turn, no interleaving with clothd.
int run_default(Session& s) {
    const int sizes[] = {32, 64, 128};
    const int steps_for[] = {200, 60, 15};
    for (int k = 0; k < 3; ++k) {
        const int n = sizes[k];
        char line[128];
        std::snprintf(line, sizeof line, "curtain %d 8 120", n);
        if (s.run(line)) return 1;
        std::vector<double> us;
        for (int i = 0; i < 7; ++i) {
            const double t0 = now_seconds();
            step(*s.timed, steps_for[k]);
            us.push_back((now_seconds() - t0) * 1e6 / steps_for[k]);
        }
        const double med = median(us);
        const int links = s.timed->links;
        s.timed.reset();
        auto c = make_curtain(n, 8, s.mode);
        step(*c, 300);
        emit("BULLET", fmt("{\"case\":\"curtain\",\"n\":%d,\"iters\":8,\"links\":%d,\"bullet_us\":%.2f,"
                           "\"bullet_projections_per_s\":%.0f,\"bullet_strain\":%.6f}",
                           n, links, med, double(links) * 8 / (med * 1e-6), max_structural_strain(*c)));
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Session s;
    bool serve = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--serve")) {
            serve = true;
        } else if (!std::strcmp(argv[i], "--bend=bullet")) {
            s.mode = BendMode::Bullet;
        } else if (!std::strcmp(argv[i], "--bend=own")) {
            s.mode = BendMode::Own;
        } else {
            std::fprintf(stderr, "usage: %s [--serve] [--bend=bullet|own]\n", argv[0]);
            return 2;
        }
    }
    if (!serve) return run_default(s);
    char buf[256];
    while (std::fgets(buf, sizeof buf, stdin)) {
        const int rc = s.run(buf);
        if (rc == 1) return 1;
        if (rc == 2) break;
    }
    return 0;
}
