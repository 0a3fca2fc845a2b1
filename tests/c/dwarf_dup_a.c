/* With dwarf_dup_b.c: one name, two different types in two units. */
struct dup { int a; int b; };
struct same { long x; char y; };
struct dup g_dup_a;
struct same g_same_a;
int b_main(void);
int main(void) { return b_main() + g_dup_a.a + (int)g_same_a.x; }
