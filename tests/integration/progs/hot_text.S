/* Functions laid over the sim's ip range, 0x401000..0x405000 (pfmfs(5),
   SAMPLING: ip = 0x401000 + ((T / 64) mod 4096) * 4), each sized by its
   .size so that a sample's function follows from its ip alone. */
        .section .hot_text, "ax", @progbits
        .globl  alpha
        .type   alpha, @function
alpha:                          /* 0x401000, 8 KiB: half of the range */
        ret
        .skip   0x2000 - 1, 0x90
        .size   alpha, . - alpha

        .globl  beta
        .type   beta, @function
beta:                           /* 0x403000, 4 KiB */
        ret
        .skip   0x1000 - 1, 0x90
        .size   beta, . - beta

        .globl  _ZN4demo5Hotel4stepEi
        .type   _ZN4demo5Hotel4stepEi, @function
_ZN4demo5Hotel4stepEi:          /* 0x404000, 2 KiB: demo::Hotel::step(int) */
        ret
        .skip   0x800 - 1, 0x90
        .size   _ZN4demo5Hotel4stepEi, . - _ZN4demo5Hotel4stepEi

        .skip   0x800, 0x90     /* 0x404800, 2 KiB without a symbol */
        .section .note.GNU-stack, "", @progbits
