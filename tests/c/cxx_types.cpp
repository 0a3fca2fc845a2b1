/* C++ types for probegen structs: templates, namespaces, references,
 * member pointers, base classes with virtual functions and an empty
 * base, C++ character types. Written for probegen's tests. */
#include <cstddef>
#include <cstdint>
#include <unistd.h>

template <class T> struct Box { T v; int tag; };

struct S { int a; double b; short grid[2][3]; int get() const { return a; } };

namespace ns {
struct Inner { long x; short y; };
enum class Color : std::uint8_t { Red = 1, Green = 2 };
namespace deep { struct Leaf { char c; int d; }; }
}

struct Base { int base_field; virtual ~Base() {} };
struct Empty {};

class Derived : public Base, public Empty {
public:
    int own;            /* in Base's tail padding (Itanium ABI) */
    int &ref;
    int &&rref;
    int S::*memptr;
    int (S::*memfn)() const;
    Box<int> boxed;
    Box<Box<char>> nested_box;
    ns::Inner inner;
    ns::Color color;
    bool flag;
    wchar_t wide;
    char16_t c16;
    char32_t c32;
    std::nullptr_t nothing;
    static int counter;
    Derived(int &r, int &&rr) : ref(r), rref(static_cast<int &&>(rr)) {}
    int method() { return own; }
};
int Derived::counter;

struct Holder { Derived *d; Box<int> b; ns::deep::Leaf leaf; int restrict; };

extern "C" __attribute__((noinline)) void use_holder(Holder *h)
{
    asm volatile("" : : "r"(h) : "memory");
}

int main(int argc, char **argv)
{
    int x = 1;
    Derived d(x, 2);
    d.own = 77;
    d.base_field = 55;
    d.flag = true;
    d.c32 = 0x1F600;
    d.boxed = {41, 42};
    d.inner = {-9, 12};
    d.color = ns::Color::Green;
    Holder h{&d, {3, 4}, {'q', 5}, 6};
    /* With an argument, again and again: a tracer attaching late still sees it. */
    for (int i = 0; i < (argc > 1 ? 400 : 1); i++) {
        use_holder(&h);
        if (argc > 1)
            usleep(50000);
    }
    (void)argv;
    return 0;
}
