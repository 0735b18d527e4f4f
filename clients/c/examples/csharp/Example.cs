// Drives clothd from C# through libclothd (Clothd.cs): a curtain of 8 x 8
// pinned by its top row, 60 steps, its positions read into a float[].
//   mono ClothdExample.exe [--port P]      (libclothd.so on LD_LIBRARY_PATH)
using System;
using System.Runtime.InteropServices;
using Clothd;

static class Example
{
    static int Main(string[] args)
    {
        ushort port = 7878;
        if (args.Length == 2 && args[0] == "--port")
            port = ushort.Parse(args[1]);
        var options = new Options { Host = "127.0.0.1", Port = port, TokenFromEnv = true };
        IntPtr client;
        Error err;
        try {
            ClothdException.Check(Native.clothd_connect(ref options, out client, out err), err);
        } catch (ClothdException e) {
            Console.Error.WriteLine("connect: " + e.Message);
            return 1;
        }
        try {
            var cloth = new ClothOptions {
                Width = OptI.Of(8), Height = OptI.Of(8), Spacing = OptF.Of(0.1f), Origin = OptV3.Of(0, 2, 0),
            };
            Created created;
            ClothdException.Check(Native.clothd_create_cloth(client, ref cloth, out created, out err), err);
            Console.WriteLine("created instance {0}: {1} particles, {2} constraints", created.Instance.Id,
                              created.Particles, created.Constraints);

            uint[] top = { 0, 1, 2, 3, 4, 5, 6, 7 };
            GCHandle topPin = GCHandle.Alloc(top, GCHandleType.Pinned);
            try {
                var pin = new PinOptions { Particles = topPin.AddrOfPinnedObject(), ParticleCount = (UIntPtr)top.Length };
                uint pinned;
                ClothdException.Check(Native.clothd_pin(client, created.Instance, ref pin, out pinned, out err), err);
                Console.WriteLine("pinned {0}", pinned);
            } finally {
                topPin.Free();
            }

            var step = new StepOptions { Dt = OptF.Of(1f / 60), Instance = created.Instance };
            for (int i = 0; i < 60; i++)
                ClothdException.Check(Native.clothd_step(client, ref step, IntPtr.Zero, out err), err);

            float[] positions = new float[3 * 64];
            GCHandle posPin = GCHandle.Alloc(positions, GCHandleType.Pinned);
            InstanceState state;
            try {
                var get = new GetOptions { Positions = posPin.AddrOfPinnedObject(), Capacity = (UIntPtr)64 };
                ClothdException.Check(Native.clothd_get(client, created.Instance, ref get, out state, out err), err);
            } finally {
                posPin.Free();
            }
            float bottom = 0;
            for (int i = 56; i < 64; i++)
                bottom += positions[3 * i + 1] / 8;
            Console.WriteLine("frame {0}, time {1:F3}, {2} particles, {3} pinned, gravity {4}", state.Frame, state.Time,
                              (ulong)state.ParticleCount, (ulong)state.PinnedCount, state.GravityY);
            Console.WriteLine("top row y={0:F3}, bottom row mean y={1:F3}", positions[1], bottom);
            Native.clothd_instance_state_free(ref state);

            ClothdException.Check(Native.clothd_destroy(client, created.Instance, out err), err);
            try {
                var get = new GetOptions();
                ClothdException.Check(Native.clothd_get(client, created.Instance, ref get, out state, out err), err);
            } catch (ClothdException e) {
                Console.WriteLine("after destroy: {0} ({1})", e.Message, e.Code);
            }
        } catch (ClothdException e) {
            Console.Error.WriteLine("clothd: " + e.Message);
            return 1;
        } finally {
            Native.clothd_close(client);
        }
        return 0;
    }
}
