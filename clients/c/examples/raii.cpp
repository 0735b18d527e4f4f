// A short C++ wrapper over libclothd: RAII for the client and for reply
// structs, exceptions carrying the wire's code, std::vector for positions.
// About 100 lines is all a C++ game server needs on top of the C API; copy
// it and grow it. Prints what a person can check:
//
//   raii [--port P]     a 10 x 10 curtain pinned by its top row, 120 steps
#include <clothd/client.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace clothd {

// An error reply or a client-side failure, with its stable code.
class Error : public std::runtime_error {
public:
    explicit Error(const clothd_error &e)
        : std::runtime_error(std::string(clothd_code_name(e.code)) + ": " + e.message), code(e.code) {}
    clothd_code code;
};

inline void check(clothd_code rc, const clothd_error &e)
{
    if (rc != CLOTHD_OK)
        throw Error(e);
}

// A reply struct that frees what it owns when it goes out of scope.
template <typename T, void (*Free)(T *)> struct Owned {
    T value{};
    Owned() = default;
    Owned(const Owned &) = delete;
    Owned &operator=(const Owned &) = delete;
    ~Owned() { Free(&value); }
    T *operator->() { return &value; }
    T *get() { return &value; }
};
using State = Owned<clothd_instance_state, clothd_instance_state_free>;
using StepResult = Owned<clothd_step_result, clothd_step_result_free>;

class Client {
public:
    explicit Client(uint16_t port, const char *host = "127.0.0.1")
    {
        clothd_options o = clothd_options_default();
        o.host = host;
        o.port = port;
        o.token_from_env = true;
        clothd_client *c = nullptr;
        clothd_error e;
        check(clothd_connect(&o, &c, &e), e);
        client_.reset(c);
    }

    clothd_instance create_cloth(int width, int height, float spacing, float y)
    {
        clothd_cloth_options o = clothd_cloth_default();
        o.width = clothd_i(width);
        o.height = clothd_i(height);
        o.spacing = clothd_f(spacing);
        o.origin = clothd_v3(0, y, 0);
        clothd_created out;
        clothd_error e;
        check(clothd_create_cloth(client_.get(), &o, &out, &e), e);
        return out.instance;
    }

    void pin(clothd_instance inst, const std::vector<uint32_t> &particles)
    {
        clothd_pin_options o{};
        o.particles = particles.data();
        o.particle_count = particles.size();
        clothd_error e;
        check(clothd_pin(client_.get(), inst, &o, nullptr, &e), e);
    }

    // Pipelined: all `count` steps go out at once; then every reply is checked.
    void step(clothd_instance inst, int count, float dt)
    {
        clothd_step_options o{};
        o.dt = clothd_f(dt);
        o.instance = inst;
        std::vector<clothd_ticket> tickets(static_cast<size_t>(count));
        clothd_error e;
        for (auto &t : tickets)
            check(clothd_send_step(client_.get(), &o, &t, &e), e);
        for (auto t : tickets) {
            StepResult r;
            check(clothd_recv_step(client_.get(), t, r.get(), &e), e);
        }
    }

    // Positions straight into the vector's storage.
    std::vector<float> positions(clothd_instance inst, uint64_t *frame = nullptr)
    {
        std::vector<float> out(3 * 4096);
        clothd_get_options g{out.data(), out.size() / 3, false, false};
        State s;
        clothd_error e;
        check(clothd_get(client_.get(), inst, &g, s.get(), &e), e);
        out.resize(3 * s->particle_count);
        if (frame != nullptr)
            *frame = s->frame;
        return out;
    }

    void destroy(clothd_instance inst)
    {
        clothd_error e;
        check(clothd_destroy(client_.get(), inst, &e), e);
    }

private:
    std::unique_ptr<clothd_client, decltype(&clothd_close)> client_{nullptr, &clothd_close};
};

} // namespace clothd

int main(int argc, char **argv)
{
    uint16_t port = CLOTHD_DEFAULT_PORT;
    if (argc == 3 && std::strcmp(argv[1], "--port") == 0)
        port = static_cast<uint16_t>(std::atoi(argv[2]));
    try {
        clothd::Client client(port);
        clothd_instance curtain = client.create_cloth(10, 10, 0.1f, 2.0f);
        client.pin(curtain, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
        client.step(curtain, 120, 1.0f / 60);
        uint64_t frame = 0;
        std::vector<float> p = client.positions(curtain, &frame);
        float bottom = 0;
        for (int i = 90; i < 100; i++)
            bottom += p[3 * i + 1] / 10;
        std::printf("frame %llu, %zu particles\n", static_cast<unsigned long long>(frame), p.size() / 3);
        std::printf("top row y=%.3f, bottom row mean y=%.3f (0.9 m below)\n", p[1], bottom);
        client.destroy(curtain);
        try {
            client.positions(curtain);
        } catch (const clothd::Error &e) {
            std::printf("after destroy: caught %s\n", e.what());
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "raii: %s\n", e.what());
        return 1;
    }
    return 0;
}
